"""Which role may call which method: the one table (API.md; ARCHITECTURE.md, Security). A method missing
from it is refused to everyone; health and reflection are open to all. A console on its own reads the pools
only; acting for a supervisor (identity.ON_BEHALF_OF) it is that supervisor, and the supervisor's role decides."""

from __future__ import annotations

from collections.abc import Mapping

from .errors import PermissionDenied, Unauthenticated
from .identity import ON_BEHALF_OF, Identity, Role

T, D, F, S, A, C = Role.TABLE, Role.DISPLAY, Role.FINANCE, Role.SUPERVISOR, Role.ADMIN, Role.CONSOLE
READERS = frozenset({D, F, S, A, C})  # the pools are public on the floor: anyone with a credential but a table

ALLOWED: Mapping[str, frozenset[Role]] = {
    # TableService: a table, for itself only (checked against the request's table_id)
    "/jackpot.v1.TableService/CommitWagers": frozenset({T}),
    "/jackpot.v1.TableService/SettleRound": frozenset({T}),
    "/jackpot.v1.TableService/VoidRound": frozenset({T}),
    "/jackpot.v1.TableService/WatchMeter": frozenset({T}),
    # DisplayService: signs, and anyone on the floor or in the office who reads
    "/jackpot.v1.DisplayService/GetPools": READERS,
    "/jackpot.v1.DisplayService/WatchPools": READERS,
    # AdminService: the floor supervisor suspends and resumes tables (NSW 14.13); the rest is administration
    "/jackpot.v1.AdminService/SuspendTable": frozenset({S, A}),
    "/jackpot.v1.AdminService/ResumeTable": frozenset({S, A}),
    "/jackpot.v1.AdminService/CreateLink": frozenset({A}),
    "/jackpot.v1.AdminService/UpdateLink": frozenset({A}),
    "/jackpot.v1.AdminService/SetRates": frozenset({A}),
    "/jackpot.v1.AdminService/SetPaytable": frozenset({A}),
    "/jackpot.v1.AdminService/RegisterTable": frozenset({A}),
    "/jackpot.v1.AdminService/FundPool": frozenset({A}),
    "/jackpot.v1.AdminService/ListHits": frozenset({F, S, A}),
    # §7: a supervisor verifies a hit above the threshold (the cards stay on the table until then)
    "/jackpot.v1.AdminService/ApproveHit": frozenset({S, A}),
    "/jackpot.v1.AdminService/RejectHit": frozenset({S, A}),
    # NZ 11.6A/B: restructuring the pools is administration
    "/jackpot.v1.AdminService/CombinePools": frozenset({A}),
    "/jackpot.v1.AdminService/SplitPools": frozenset({A}),
    # the trail of administrative acts: those who answer for them, and finance, read it
    "/jackpot.v1.AdminService/ListAudit": frozenset({F, S, A}),
    # ReportService: finance, and administrators who answer for the books (RULES.md §10)
    "/jackpot.v1.ReportService/GetReconciliation": frozenset({F, A}),
    "/jackpot.v1.ReportService/ExportLedger": frozenset({F, A}),
    "/jackpot.v1.ReportService/ExportLedgerPages": frozenset({F, A}),
    "/jackpot.v1.ReportService/VerifyLedger": frozenset({F, A}),
    "/jackpot.v1.ReportService/GetLiability": frozenset({F, A}),
    # issue 24: a running link's config and balances, for its math certificate: read as the other reports
    "/jackpot.v1.ReportService/GetMath": frozenset({F, A}),
}

OPEN_PREFIXES = ("/grpc.health.v1.Health/", "/grpc.reflection.")


def is_open(method: str) -> bool:
    """Health and reflection answer anyone: load balancers and grpcurl need them."""
    return method.startswith(OPEN_PREFIXES)


def authorize(method: str, identity: Identity | None, table_id: str | None = None) -> None:
    """Raise unless `identity` may call `method` (for a table method, on `table_id`)."""
    if identity is None:
        raise Unauthenticated(f"{method.rsplit('/', 1)[-1]} needs a credential: a client certificate or a "
                              "bearer token")
    allowed = ALLOWED.get(method)
    if allowed is None or identity.role not in allowed:
        hint = f" on its own: it acts for a supervisor named in {ON_BEHALF_OF}" if identity.role is C else ""
        raise PermissionDenied(f"{identity.role.value} {identity.actor!r} may not call "
                               f"{method.rsplit('/', 1)[-1]}{hint}")
    if identity.role is Role.TABLE and table_id is not None and table_id != identity.actor:
        raise PermissionDenied(f"table {identity.actor!r} may not act for table_id={table_id[:100]!r}")
