"""`jackpot-report`: the finance office's client of jackpotd's ReportService (RULES.md §10).

Reconciliation of a gaming day or any period (text, CSV, JSON or one self-contained HTML file), the ledger
exported to CSV, the ledger verified, and what the pools owe players now. Every figure is rendered from one
plain dict per message (`model`), from integer µ¢ only, so every format carries the same numbers."""
