-- Issue 21: when each table's last round settled or was voided (TableStatus.last_round_at_ms), found by one probe
-- per table (store/ledger/reads.py last_rounds) rather than a scan of the link's entries. The feed keeps it current
-- from the entries it reads anyway; this is read when a process first shows a link, and by GetPools. The table is
-- the one that asked, from the request id ("table:<id>:<request>"), never from the entry's JSON: PostgreSQL's JSON
-- operators refuse an entry holding a NUL in its free text, and an index on them would refuse the entry itself.
CREATE INDEX entries_round_ends ON entries (link_id, (split_part(request_id, ':', 2)), seq)
    WHERE kind IN ('settle', 'void');
