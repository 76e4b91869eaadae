-- Integrity (issue: hostile ids, lost Redis state, dead processes).
-- A hit is identified by (link, table, round, seat), never by a joined string that could collide.
ALTER TABLE hits DROP CONSTRAINT hits_pkey;
ALTER TABLE hits ADD PRIMARY KEY (link_id, table_id, round_id, seat);
CREATE INDEX hits_hit_id ON hits (hit_id);

-- Configs keep the exact text the service wrote, like entries: free text (an approval reference) may hold
-- any Unicode, NUL included, which `json` keeps as the escape it is and `jsonb` refuses.
ALTER TABLE link_configs ALTER COLUMN config TYPE json USING config::json;

-- A link whose entry the ledger refused is fenced alone until an operator resolves it (`jackpotd fenced`).
CREATE TABLE link_fences (
    link_id    text PRIMARY KEY,
    seq        bigint NOT NULL,          -- the first entry the ledger could not take
    reason     text NOT NULL,
    fenced_at  timestamptz NOT NULL DEFAULT now()
);
GRANT SELECT, INSERT, UPDATE, DELETE ON link_fences TO jackpotd_app;

-- Every commit asks whether its round id was ever used on the link, once Redis has let the round go.
CREATE INDEX rounds_open ON rounds (link_id) WHERE state = 'COMMITTED';
