-- Issue 22 (the writer's cost per entry): the references the ledger writer's append makes most, checked once per
-- statement instead of once per row. A foreign key fires a trigger per inserted row that looks the referenced row
-- up and locks it (FOR KEY SHARE: the entry's tuple dirtied and WAL-logged again); about five postings, one entry
-- and one round per commit made that a third of PostgreSQL's time per appended entry. The same references are
-- now checked by statement-level triggers over the statement's new rows (one anti-join per batch), at the same
-- moment (the end of the statement) and with the same SQLSTATE (23503, foreign_key_violation); the referenced
-- side is held by triggers too: entries were already append-only, and a link's row cannot be deleted or renamed
-- while entries or rounds name it. The other foreign keys (rare rows: hits, decisions, configs, tables,
-- summaries) stay as they were; account_balances, link_configs and tables still keep TRUNCATE links refused.
ALTER TABLE postings DROP CONSTRAINT postings_link_id_seq_fkey;
ALTER TABLE entries DROP CONSTRAINT entries_link_id_fkey;
ALTER TABLE rounds DROP CONSTRAINT rounds_link_id_fkey;

CREATE FUNCTION ledger_postings_have_entries() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE missing record;
BEGIN
    SELECT n.link_id, n.seq INTO missing FROM new_rows n
    WHERE NOT EXISTS (SELECT 1 FROM entries e WHERE e.link_id = n.link_id AND e.seq = n.seq) LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'a posting of link % names entry %, which the ledger does not hold', missing.link_id,
            missing.seq USING ERRCODE = 'foreign_key_violation', TABLE = 'postings';
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER postings_have_entries AFTER INSERT ON postings REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_postings_have_entries();

CREATE FUNCTION ledger_rows_have_links() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE missing text;
BEGIN
    SELECT n.link_id INTO missing FROM new_rows n
    WHERE NOT EXISTS (SELECT 1 FROM links l WHERE l.link_id = n.link_id) LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'a row of % names link %, which the ledger does not hold', TG_TABLE_NAME, missing
            USING ERRCODE = 'foreign_key_violation', TABLE = TG_TABLE_NAME;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER entries_have_links AFTER INSERT ON entries REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_rows_have_links();
CREATE TRIGGER rounds_have_links AFTER INSERT ON rounds REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_rows_have_links();
CREATE TRIGGER rounds_keep_links AFTER UPDATE ON rounds REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_rows_have_links();

-- The referenced side: a link's row stays while entries or rounds name it (what the foreign keys' NO ACTION did).
CREATE FUNCTION ledger_link_still_named() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (TG_OP = 'DELETE' OR NEW.link_id IS DISTINCT FROM OLD.link_id)
       AND (EXISTS (SELECT 1 FROM entries e WHERE e.link_id = OLD.link_id)
            OR EXISTS (SELECT 1 FROM rounds r WHERE r.link_id = OLD.link_id)) THEN
        RAISE EXCEPTION 'link % is named by its entries or rounds: % on links refused', OLD.link_id, TG_OP
            USING ERRCODE = 'foreign_key_violation', TABLE = 'links';
    END IF;
    RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
END $$;
CREATE TRIGGER links_still_named BEFORE DELETE OR UPDATE OF link_id ON links
    FOR EACH ROW EXECUTE FUNCTION ledger_link_still_named();

-- An index written by every commit and read by nothing: each read of open rounds (recovery's snapshot, the
-- between-rounds check) asks for COMMITTED or PENDING, which rounds_open_or_pending (migration 010) serves.
DROP INDEX rounds_open;
