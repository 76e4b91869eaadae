-- Issue 23 (a writer cut off from Redis gives its shards up; docs/DECISIONS.md, Faults, "Writers cut off from
-- Redis"). Each writer process says, with every renewal of its liveness, when it last heard its Redis answer, by
-- PostgreSQL's clock (the renewal's time less the process's own count of seconds since): a leader whose Redis has
-- not answered for the lease time gives its shards up only to a live writer whose Redis answers, and health says
-- why a live holder writes nothing. NULL: never heard (a process of an earlier version, or one just started).
ALTER TABLE writer_holders ADD COLUMN redis_ok_at timestamptz;
GRANT UPDATE (redis_ok_at) ON writer_holders TO jackpotd_app;
