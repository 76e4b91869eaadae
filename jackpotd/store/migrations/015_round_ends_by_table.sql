-- Issue 21: when each table's last round settled or was voided (TableStatus.last_round_at_ms), found by one probe
-- per table (store/ledger/reads.py last_rounds) rather than a scan of the link's entries. The feed keeps it current
-- from the entries it reads anyway; this is read when a process first shows a link, and by GetPools.
CREATE INDEX entries_round_ends ON entries (link_id, ((entry->'round'->>'table_id')), seq)
    WHERE kind IN ('settle', 'void');
