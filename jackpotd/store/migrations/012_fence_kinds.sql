-- Issue 19: a fence says what stopped the link. `refused`: the ledger refused one of its entries (or its Redis
-- journal could not be read, or kept forking); `truncated`, `rewritten`, `head-edited`: the ledger was changed
-- behind the writer's back (store/ledger/head_guard.py). Only `jackpotd unfence`, which checks the anchors kept
-- outside the database again, lifts a fence of the latter kinds for good.
ALTER TABLE link_fences ADD COLUMN kind text NOT NULL DEFAULT 'refused';
