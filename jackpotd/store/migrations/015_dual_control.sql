-- Dual control (RULES.md §7, NM 15.1.24.12; issue 21): a hit at or above a link's dual_approval_threshold_cents
-- needs two distinct supervisors. Its settle records how many approvals it needs (1 for every hit before this);
-- the first of two approvals is an entry of its own (kind first_approval, no postings), projected here. The
-- second approval is the hit's decision (hit_decisions), as a single approval always was. Both rows are
-- re-derived from the entries by the audit.
ALTER TABLE hits ADD COLUMN approvals_needed smallint NOT NULL DEFAULT 1 CHECK (approvals_needed IN (1, 2));

CREATE TABLE hit_approvals (
    link_id   text NOT NULL,
    table_id  text NOT NULL,
    round_id  text NOT NULL,
    seat      int NOT NULL,
    hit_id    text NOT NULL,
    seq       bigint NOT NULL,           -- the approval's entry; its audit names who approved
    actor     text NOT NULL,             -- who approved: the entry's audit actor
    PRIMARY KEY (link_id, table_id, round_id, seat),
    FOREIGN KEY (link_id, table_id, round_id, seat) REFERENCES hits (link_id, table_id, round_id, seat),
    FOREIGN KEY (link_id, seq) REFERENCES entries
);

CREATE TRIGGER hit_approvals_append_only BEFORE UPDATE OR DELETE ON hit_approvals
    FOR EACH ROW EXECUTE FUNCTION refuse_ledger_change();
CREATE TRIGGER hit_approvals_no_truncate BEFORE TRUNCATE ON hit_approvals
    FOR EACH STATEMENT EXECUTE FUNCTION refuse_ledger_change();

REVOKE ALL ON hit_approvals FROM jackpotd_app;
GRANT SELECT, INSERT ON hit_approvals TO jackpotd_app;
