-- Hits awaiting verification (RULES.md §7; issue 10, part 4): a supervisor's approval or rejection of a
-- PENDING hit. Append-only like the hits it decides: one decision per hit, forever. A hit's status is its
-- decision's (PAID or REJECTED) when it has one, else the status it was settled with.
CREATE TABLE hit_decisions (
    link_id   text NOT NULL,
    table_id  text NOT NULL,
    round_id  text NOT NULL,
    seat      int NOT NULL,
    hit_id    text NOT NULL,
    seq       bigint NOT NULL,           -- the decision's entry
    status    text NOT NULL CHECK (status IN ('PAID', 'REJECTED')),
    reason    text NOT NULL,             -- as a JSON string: free text may hold a NUL, which text cannot
    PRIMARY KEY (link_id, table_id, round_id, seat),
    FOREIGN KEY (link_id, table_id, round_id, seat) REFERENCES hits (link_id, table_id, round_id, seat),
    FOREIGN KEY (link_id, seq) REFERENCES entries
);

CREATE TRIGGER hit_decisions_append_only BEFORE UPDATE OR DELETE ON hit_decisions
    FOR EACH ROW EXECUTE FUNCTION refuse_ledger_change();
CREATE TRIGGER hit_decisions_no_truncate BEFORE TRUNCATE ON hit_decisions
    FOR EACH STATEMENT EXECUTE FUNCTION refuse_ledger_change();

REVOKE ALL ON hit_decisions FROM jackpotd_app;
GRANT SELECT, INSERT ON hit_decisions TO jackpotd_app;
