-- Issue 22 (the writer's cost per entry): migration 017's statement-level reference checks probe once per distinct
-- key of the statement's new rows, not once per row. A commit's five postings name one entry, and a batch's
-- thousands of entries and rounds name one link or a few, so the anti-join now looks up each entry once and each
-- link once per batch. Same checks, same moment, same SQLSTATE (23503) and messages: only the probes are fewer.
CREATE OR REPLACE FUNCTION ledger_postings_have_entries() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE missing record;
BEGIN
    SELECT n.link_id, n.seq INTO missing FROM (SELECT DISTINCT link_id, seq FROM new_rows) n
    WHERE NOT EXISTS (SELECT 1 FROM entries e WHERE e.link_id = n.link_id AND e.seq = n.seq) LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'a posting of link % names entry %, which the ledger does not hold', missing.link_id,
            missing.seq USING ERRCODE = 'foreign_key_violation', TABLE = 'postings';
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION ledger_rows_have_links() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE missing text;
BEGIN
    SELECT n.link_id INTO missing FROM (SELECT DISTINCT link_id FROM new_rows) n
    WHERE NOT EXISTS (SELECT 1 FROM links l WHERE l.link_id = n.link_id) LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'a row of % names link %, which the ledger does not hold', TG_TABLE_NAME, missing
            USING ERRCODE = 'foreign_key_violation', TABLE = TG_TABLE_NAME;
    END IF;
    RETURN NULL;
END $$;
