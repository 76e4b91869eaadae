"""The demo configuration of `make run`: one split link and six Caribbean Stud tables, seeded."""

from __future__ import annotations

import contextlib
import logging

from .domain.errors import FailedPrecondition
from .domain.link import LinkConfig, TableConfig
from .domain.paytable import default_paytable
from .domain.pools import MAJOR, MINOR, RESERVE, SPLIT, PoolSpec
from .domain.rates import RateSet
from .service.commands import Audit, CreateLink, Fund, RegisterTable, Request
from .service.services import Services

log = logging.getLogger("jackpotd.demo")
DEMO_LINK = "demo"
AUDIT = Audit("system:demo", "demo configuration", "DEMO-APPROVAL-1")
# NM 15.1.24.12: a hit of $10,000 or more needs two supervisors; a royal flush takes all of MAJOR (never below its
# $10,000 reset), so a supervisor can try dual control on the demo (RULES.md §7)
DEMO_DUAL_APPROVAL_CENTS = 1_000_000
CALLER = "system:demo"  # the demo's requests are its own: no caller of the API can claim or block their ids


def demo_config() -> LinkConfig:
    """The demo link as CreateLink makes it (its tables are registered after): a split link of the DOMAIN defaults.
    Its own function so the suite certifies exactly this configuration (tests/unit/test_shipped_certificates.py)."""
    return LinkConfig(
        link_id=DEMO_LINK, mode=SPLIT, wager_cents=100,
        pools=(PoolSpec(MAJOR, 1_000_000), PoolSpec(MINOR, 100_000), PoolSpec(RESERVE)),
        rate_sets=(RateSet({MAJOR: 200_000, MINOR: 75_000, RESERVE: 25_000}, 700_000, 1, 0, "DEMO-APPROVAL-1"),),
        paytables={"caribbean-stud": default_paytable("caribbean-stud", SPLIT)},
        dual_approval_threshold_cents=DEMO_DUAL_APPROVAL_CENTS)


def demo_tables() -> tuple[TableConfig, ...]:
    """The demo's six seven-seat Caribbean Stud tables, registered on the demo link."""
    return tuple(TableConfig(f"demo-table-{n}", "caribbean-stud", 7) for n in range(1, 7))


async def load_demo(services: Services) -> None:
    """Idempotent: fixed request ids, so a restart changes nothing."""
    config = demo_config()
    with contextlib.suppress(FailedPrecondition):  # created on an earlier run
        await services.admin.change(CreateLink(Request("demo-create-link", {"demo": "link"}, CALLER), config, AUDIT))
    for n, table in enumerate(demo_tables(), 1):
        await services.admin.change(RegisterTable(Request(f"demo-register-{n}", {"demo": table.table_id}, CALLER),
                                                  DEMO_LINK, table, AUDIT))
    for pool, cents in ((MAJOR, 1_000_000), (MINOR, 100_000)):
        seed = Request(f"demo-seed-{pool}", {"demo": pool}, CALLER)
        await services.admin.fund(Fund(seed, DEMO_LINK, pool, cents, AUDIT))
    log.info("demo link %r ready: six Caribbean Stud tables demo-table-1..6; try `jackpotd pools --link demo`",
             DEMO_LINK)
