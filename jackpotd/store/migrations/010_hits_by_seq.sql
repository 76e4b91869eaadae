-- Signs are fed from the ledger (issue 11): the hits of a range of a link's entries, and its latest hit, are
-- found by sequence.
CREATE INDEX hits_link_seq ON hits (link_id, seq);

-- A rebuild restores every open round: committed, or settled with a hit awaiting verification (§7).
CREATE INDEX rounds_open_or_pending ON rounds (link_id) WHERE state IN ('COMMITTED', 'PENDING');
