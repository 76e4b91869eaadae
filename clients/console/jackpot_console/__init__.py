"""`jackpot-console`: the floor's web console (pending hits, tables, audit trail, pools) for supervisors."""
