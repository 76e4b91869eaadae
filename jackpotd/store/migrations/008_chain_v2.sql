-- Tamper evidence (issue 10, part 3; docs/DECISIONS.md, Hash chain). Entries written from now on are chain
-- version 2, whose hash also covers the stored reply: every stored byte of an entry is chained. Rows already
-- written keep version 1 (entry text and postings), which is what their hashes cover.
ALTER TABLE entries ADD COLUMN chain_version smallint NOT NULL DEFAULT 1;

-- Hits are append-only like the ledger they project (the service's role never had UPDATE or DELETE on them).
CREATE TRIGGER hits_append_only BEFORE UPDATE OR DELETE ON hits
    FOR EACH ROW EXECUTE FUNCTION refuse_ledger_change();
CREATE TRIGGER hits_no_truncate BEFORE TRUNCATE ON hits
    FOR EACH STATEMENT EXECUTE FUNCTION refuse_ledger_change();
CREATE TRIGGER link_configs_no_truncate BEFORE TRUNCATE ON link_configs
    FOR EACH STATEMENT EXECUTE FUNCTION refuse_ledger_change();
