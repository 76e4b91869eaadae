"""Prometheus metrics a dashboard can use: request rates and latency, ledger batches, hits, pool amounts.

Every series exists at 0 as soon as its labels are known, so an alert sees 0 rather than nothing: unlabelled ones
from import, a link's as its writer follows it or its first watcher comes, restarts per process kind when the
supervisor starts, a method's OK count when it is first called. Streaming calls count when they end.

With gRPC worker processes (`jackpotd serve --workers N`) every process writes its metrics to files in
PROMETHEUS_MULTIPROC_DIR (set by `jackpotd serve` before prometheus_client is imported) and the
supervisor's /metrics adds them up (`registry()`); counts of a dead worker stay in the sums.
"""

from __future__ import annotations

import os

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram, multiprocess

REQUESTS = Counter("jackpotd_requests_total", "gRPC calls by method and status code", ["method", "code"])
LATENCY = Histogram("jackpotd_request_seconds", "gRPC call latency by method", ["method"],
                    buckets=(0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5))
LEDGER_BATCH = Histogram("jackpotd_ledger_batch_entries", "journal entries per PostgreSQL commit",
                         buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048))
LEDGER_LAG = Histogram("jackpotd_ledger_commit_seconds", "time to commit one ledger batch",
                       buckets=(0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1))
WRITER_LEADER = Gauge("jackpotd_writer_leader", "1 while this process holds writer leases and writes their shards",
                      multiprocess_mode="livemax")
WRITER_SHARDS = Gauge("jackpotd_writer_shard", "1 for each writer shard (of 16) this process holds the lease of "
                      "and writes", ["shard"], multiprocess_mode="livemax")
WRITER_FENCED = Counter("jackpotd_writer_fenced_appends", "appends PostgreSQL refused because another writer took "
                        "the shard's lease over (this one was paused or cut off); the writer stopped at once")
FUTURE_DATED = Counter("jackpotd_entries_future_dated_total", "entries decided by a clock ahead of the ledger "
                       "writer's, dated by the writer's instead (check the replicas' time sync)", ["link"])
HITS = Counter("jackpotd_hits_total", "jackpot hits paid by link, hand and pool", ["link", "hand", "pool"])
# Set by the ledger writer as it commits; across processes the newest value wins.
POOL_CENTS = Gauge("jackpotd_pool_cents", "pool amounts in cents as last committed to the ledger", ["link", "pool"],
                   multiprocess_mode="mostrecent")
LEDGER_QUESTIONS = Counter("jackpotd_ledger_id_questions_total", "mutating calls that asked the ledger whether their "
                           "request or round id was used, by why (service/seen.py Why)", ["why"])
for _why in ("maybe", "unfilled", "refused"):  # every Why at 0 from the start (tests/unit/test_seen_filter.py)
    LEDGER_QUESTIONS.labels(_why)
CAS_RETRIES = Counter("jackpotd_price_retries_total", "settlements re-priced because the pools moved", ["link"])
LINK_REBUILDS = Counter("jackpotd_link_rebuilds_total", "links rebuilt from the ledger because Redis forgot, went "
                        "back or forked", ["link", "reason"])  # reason: lost, behind, forked
LINK_FENCED = Gauge("jackpotd_link_fenced", "1 while a link is fenced because the ledger refused one of its entries",
                    ["link"], multiprocess_mode="mostrecent")
DURABILITY_CHECKS = Counter("jackpotd_durability_ledger_checks_total", "answers whose durability was confirmed by "
                            "reading the ledger because no announcement named them", ["outcome"])
for _outcome in ("held", "replaced"):  # every outcome at 0 from the start (store/durability.py counts them)
    DURABILITY_CHECKS.labels(_outcome)
ADMIN_AUDIT_FAILURES = Counter("jackpotd_admin_audit_failures_total", "AdminService calls answered but not "
                               "recorded in the audit trail (admin_audit)", ["method"])
# Signs and meters (service/feed.py): how many watch, how often the ledger is read for them, who was let go.
WATCHERS = Gauge("jackpotd_watchers", "WatchPools and WatchMeter streams open, by link", ["link"],
                 multiprocess_mode="livesum")
FEED_READS = Counter("jackpotd_feed_reads_total", "reads of newly committed entries for the signs, by link", ["link"])
FEED_DROPPED = Counter("jackpotd_feed_dropped_total", "streams let go because they left too much unread, by link",
                       ["link"])
RESTARTS = Counter("jackpotd_process_restarts_total", "processes the supervisor restarted after they died",
                   ["process"])  # worker, valkey, postgres


def multiprocess_dir() -> str | None:
    """The directory worker processes write their metrics to, when serving with workers."""
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None


def registry() -> CollectorRegistry:
    """What /metrics serves: every process's metrics in multiprocess mode, else this process's own."""
    if multiprocess_dir() is None:
        return REGISTRY
    aggregate = CollectorRegistry()
    multiprocess.MultiProcessCollector(aggregate)  # type: ignore[no-untyped-call]
    return aggregate


def process_dead(pid: int) -> None:
    """Drop a dead process's live gauges (its counters and histograms stay in the sums)."""
    if multiprocess_dir() is not None:
        multiprocess.mark_process_dead(pid)  # type: ignore[no-untyped-call]
