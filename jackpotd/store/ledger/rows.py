"""The rows an entry's decision and first approval make (hit_decisions, hit_approvals): one definition for the
append (chain.py) and for audit, which derives them again from the entry."""

from __future__ import annotations

from typing import Any

from ...canonical import canonical_json


def decision_row(link_id: str, seq: int, decision: dict[str, Any]) -> tuple[Any, ...]:
    """A hit decision as its hit_decisions row (the append, and audit re-deriving it); the reason as JSON, so
    any text a caller sent, NUL included, is stored (a NUL in a text column would refuse the whole batch)."""
    return (link_id, decision["table_id"], decision["round_id"], decision["seat"], decision["hit_id"], seq,
            decision["status"], canonical_json(decision["reason"]))


def approval_row(link_id: str, seq: int, approval: dict[str, Any], audit: dict[str, Any]) -> tuple[Any, ...]:
    """A first approval as its hit_approvals row (the append, and audit re-deriving it): who, from the audit."""
    return (link_id, approval["table_id"], approval["round_id"], approval["seat"], approval["hit_id"], seq,
            audit["actor"])
