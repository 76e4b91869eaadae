"""Prometheus metrics a dashboard can use: request rates and latency, ledger batches, hits, pool amounts."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

REQUESTS = Counter("jackpotd_requests_total", "gRPC calls by method and status code", ["method", "code"])
LATENCY = Histogram("jackpotd_request_seconds", "gRPC call latency by method", ["method"],
                    buckets=(0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5))
LEDGER_BATCH = Histogram("jackpotd_ledger_batch_entries", "journal entries per PostgreSQL commit",
                         buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048))
LEDGER_LAG = Histogram("jackpotd_ledger_commit_seconds", "time to commit one ledger batch",
                       buckets=(0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1))
HITS = Counter("jackpotd_hits_total", "jackpot hits paid by link, hand and pool", ["link", "hand", "pool"])
POOL_CENTS = Gauge("jackpotd_pool_cents", "pool amounts in cents as last seen by this replica", ["link", "pool"])
CAS_RETRIES = Counter("jackpotd_price_retries_total", "settlements re-priced because the pools moved", ["link"])
