"""The ledger writer (`core`): group-commits each link's journal into PostgreSQL and announces what is durable;
what each link's ledger head is held to (`heads`), the links stopped for a person (`fences`) and a refused
batch retried entry by entry (`batches`)."""

from .core import LeaseLost, LedgerWriter

__all__ = ["LeaseLost", "LedgerWriter"]
