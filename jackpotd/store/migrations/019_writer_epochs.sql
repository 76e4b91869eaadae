-- Issue 23 (paused or partitioned leaders are replaced and fenced; docs/DECISIONS.md, Faults). A writer shard's
-- lease is still its advisory lock (store/leader.py), but a lock proves nothing about a process that is paused or
-- cut off: the kernel keeps its session, and the lock with it. So each shard also has an epoch, bumped by every
-- writer that takes the shard, and every append carries the epochs its writer took: PostgreSQL refuses, in the
-- append's own transaction, an append whose epoch is not the shard's (SQLSTATE JPL01, ledger_lease_held).
--   writer_leases: one row per shard (store/shards.py SHARDS = 16): its epoch, who took it last and when.
--   writer_holders: each writer process's liveness, renewed every second by PostgreSQL's own clock; a holder
--     silent for longer than the lease time has its sessions ended by a standby (pg_terminate_backend, by their
--     application_name 'jackpotd-writer <holder>'), which frees its advisory locks. Apart from writer_leases, so
--     a renewal never waits on the row locks the appends hold.
CREATE TABLE writer_leases (
    shard smallint PRIMARY KEY CHECK (shard BETWEEN 0 AND 15),
    epoch bigint NOT NULL DEFAULT 0,
    holder text,
    taken_at timestamptz
);
INSERT INTO writer_leases (shard) SELECT generate_series(0, 15);

CREATE TABLE writer_holders (
    holder text PRIMARY KEY,
    renewed_at timestamptz NOT NULL
);

-- The append's check (chain.py _APPEND; bulk.py runs it in the first statement of a bulk transaction). The rows
-- are locked FOR SHARE, which a takeover's UPDATE of the epoch waits on: an append that passed the check commits
-- before the epoch moves, and one checked after it is refused. Not KEY SHARE: that would not conflict with it.
CREATE FUNCTION ledger_lease_held(shards smallint[], epochs bigint[]) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    stale record;
BEGIN
    IF coalesce(cardinality(shards), 0) = 0 THEN
        RETURN true;  -- an append outside any writer's lease (recovery tools, tests): nothing to check
    END IF;
    IF cardinality(shards) <> coalesce(cardinality(epochs), 0) THEN
        RAISE EXCEPTION 'ledger_lease_held: % shards but % epochs', cardinality(shards), cardinality(epochs)
            USING ERRCODE = 'JPL01', DETAIL = 'shard=-1 epoch=-1 held=-1';
    END IF;
    PERFORM 1 FROM writer_leases WHERE shard = ANY (shards) ORDER BY shard FOR SHARE;
    SELECT g.shard, l.epoch, g.epoch AS held INTO stale
    FROM unnest(shards, epochs) AS g(shard, epoch) LEFT JOIN writer_leases l ON l.shard = g.shard
    WHERE l.epoch IS DISTINCT FROM g.epoch ORDER BY g.shard LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'shard %''s lease epoch is %, this writer holds %: another writer took it over',
            stale.shard, coalesce(stale.epoch, -1), stale.held
            USING ERRCODE = 'JPL01', DETAIL = format('shard=%s epoch=%s held=%s', stale.shard,
                                                     coalesce(stale.epoch, -1), stale.held);
    END IF;
    RETURN true;
END $$;

REVOKE ALL ON writer_leases, writer_holders FROM jackpotd_app;
GRANT SELECT ON writer_leases TO jackpotd_app;
GRANT UPDATE (epoch, holder, taken_at) ON writer_leases TO jackpotd_app;  -- the takeover; FOR SHARE needs it too
GRANT SELECT, INSERT, DELETE ON writer_holders TO jackpotd_app;
GRANT UPDATE (renewed_at) ON writer_holders TO jackpotd_app;
