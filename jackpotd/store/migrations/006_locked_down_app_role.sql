-- Locked-down stores (issue 10; docs/DECISIONS.md, Locked-down stores). The service logs in as jackpotd_app
-- (no more SET ROLE from a superuser session), so its grants are all it has: exactly what its statements
-- need, and never UPDATE, DELETE or TRUNCATE on a ledger table.
--   entries, postings, hits, link_configs: the append (chain.py _APPEND) inserts; audit, recovery and
--     lookups read.
--   links, account_balances, rounds: the append upserts the head, the balances and the round states
--     (INSERT ... ON CONFLICT DO UPDATE): UPDATE of those columns only.
--   tables: INSERT ... ON CONFLICT DO NOTHING.
--   link_fences: set_fence inserts (ON CONFLICT DO NOTHING), clear_fence deletes (unfence, an operator's
--     act); not a ledger table, nothing there is money.
-- Owning no table, the role cannot disable a trigger, alter or drop a table; it is no superuser (set up by the
-- embedded server, or by the DBA for an external one: README, Pointing it at real Redis and PostgreSQL).
REVOKE ALL ON entries, postings, hits, link_configs, links, account_balances, rounds, tables, link_fences,
              schema_migrations FROM jackpotd_app;
GRANT SELECT, INSERT ON entries, postings, hits, link_configs TO jackpotd_app;
GRANT SELECT, INSERT ON links, account_balances, rounds, tables, link_fences TO jackpotd_app;
GRANT UPDATE (last_seq, last_hash) ON links TO jackpotd_app;
GRANT UPDATE (balance_uc) ON account_balances TO jackpotd_app;
GRANT UPDATE (state, rev, data) ON rounds TO jackpotd_app;
GRANT DELETE ON link_fences TO jackpotd_app;
GRANT SELECT ON schema_migrations TO jackpotd_app;
