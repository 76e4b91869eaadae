"""What the history checker answers (chaos/verdicts.py decides, chaos/check.py prints): a verdict per invariant,
and the report of them all. The harness adds its own verdicts (liveness) to a report."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

SHOWN = 5  # offending items a verdict names; the rest are counted


@dataclass(frozen=True, slots=True)
class Verdict:
    """One invariant's result: `detail` gives counts, and on failure the first offending items."""

    name: str
    ok: bool
    detail: str


@dataclass(slots=True)
class Report:
    """Every invariant's verdict (the harness appends its own); ok only when all hold."""

    verdicts: list[Verdict] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether every invariant holds."""
        return all(v.ok for v in self.verdicts)

    def render(self) -> str:
        """One line per invariant: `PASS|FAIL <name>: <detail>`."""
        return "\n".join(f"{'PASS' if v.ok else 'FAIL'} {v.name}: {v.detail}" for v in self.verdicts)


def verdict(name: str, bad: Sequence[str], summary: str) -> Verdict:
    """PASS with the summary, or FAIL naming the first SHOWN offending items and counting the rest."""
    if not bad:
        return Verdict(name, True, summary)
    more = f"; ... and {len(bad) - SHOWN} more" if len(bad) > SHOWN else ""
    return Verdict(name, False, f"{len(bad)} problem(s) ({summary}): {'; '.join(bad[:SHOWN])}{more}")
