-- A fresh ledger grows fast, and plans cached while a table was nearly empty (the foreign-key checks of
-- every posting, on the writer's long-lived connection) scan it whole until it is analyzed again: the
-- writer ran 13 times slower for its first minute in the soak benchmark. Analyze after every few
-- thousand new rows rather than after 10% of the table, so plans follow the ledger as it grows.
ALTER TABLE entries SET (autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 5000);
ALTER TABLE postings SET (autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 10000);
ALTER TABLE rounds SET (autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 5000,
                        autovacuum_vacuum_scale_factor = 0.05);
ALTER TABLE hits SET (autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 1000);
