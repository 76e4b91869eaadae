"""Rows as arrays for unnest(): how one statement inserts many rows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def columns(rows: Sequence[tuple[Any, ...]], width: int) -> list[list[Any]]:
    """Rows as one array per column, for unnest()."""
    return [list(c) for c in zip(*rows, strict=True)] if rows else [[] for _ in range(width)]
