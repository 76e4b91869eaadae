"""Why tables are not playing, as the one line `jackpot-table` prints (issue 32): jackpotd unreachable, a table
suspended (and how a supervisor resumes it), or the table's meter refused; never a traceback."""

from __future__ import annotations

from collections.abc import Sequence

from jackpotd.target import START_HINT, failure_line

from .controller import TableController

PROG = "jackpot-table"


def suspended_line(tables: Sequence[str], link: str) -> str:
    """The tables are suspended: their jackpot wagers are off until a supervisor resumes them."""
    named = tables[0] if len(tables) == 1 else "TABLE"
    on_link = f" --link {link}" if link else ""
    verb, them = ("is", "it") if len(tables) == 1 else ("are", "each")
    return (f"{PROG}: table {', '.join(tables)} {verb} suspended: jackpot wagers are off until a supervisor resumes "
            f"{them} with `jackpot-floor resume {named}{on_link} --reason TEXT --ref REF`")


def why_not(target: str, controller: TableController) -> str:
    """One table's reason, as a line."""
    if controller.suspended:
        return suspended_line([controller.config.table_id], controller.link_id)
    if controller.meter_error is not None:
        code, details = controller.meter_error
        line = failure_line(PROG, target, code, details)
        table = controller.config.table_id
        return line if code == "UNAVAILABLE" or repr(table) in line else f"{line} (table {table})"
    return (f"{PROG}: jackpotd at {target} has not answered for {controller.config.silence_limit:g} s: "
            f"{START_HINT}")


def not_playing(target: str, controllers: Sequence[TableController]) -> str:
    """The one line for tables that take no jackpot wagers: the first table's reason, the tables suspended named
    together, and how many more tables are off for other reasons."""
    idle = [c for c in controllers if not c.jackpot_enabled]
    if not idle:
        return ""
    suspended = [c for c in idle if c.suspended]
    first = idle[0]
    if first.suspended:
        line, covered = suspended_line([c.config.table_id for c in suspended], first.link_id), len(suspended)
    else:
        line = why_not(target, first)
        covered = sum(why_not(target, c) == line for c in idle)
    more = len(idle) - covered
    return line + (f" (and {more} more table(s) not playing)" if more else "")
