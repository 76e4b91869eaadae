"""The naive twin of jackpotd's table path (issue 22, P2): one PostgreSQL transaction per call, for bench_naive.py."""
