"""A link's configuration requests (CreateLink, UpdateLink, SetRates, SetPaytable, RegisterTable) as the domain's
configs and the service's commands: one translation, used by the servicer and by jackpot-math's TOML files."""

from __future__ import annotations

from collections.abc import Sequence

from ..domain.link import LinkConfig, TableConfig
from ..domain.paytable import PaytableEntry
from ..domain.pools import PoolSpec
from ..domain.rates import RateSet
from ..service import admin_requests
from ..service import commands as c
from .gen.jackpot.v1 import admin_pb2


def pools_of(items: Sequence[admin_pb2.PoolConfig]) -> tuple[PoolSpec, ...]:
    """Requested pools; a cap only when the field is present (0 is a cap)."""
    return tuple(admin_requests.pool_spec(p.pool, p.reset_cents, p.cap_cents if p.HasField("cap_cents") else None,
                                          p.overflow_to) for p in items)


def rates_of(r: admin_pb2.Rates, approval_ref: str) -> RateSet:
    """A requested rate set as version 1 (a new link's, or a restructure's), under its approval."""
    return admin_requests.rate_set({x.pool: x.ppm for x in r.pools}, r.retained_ppm, r.effective_at_ms, approval_ref)


def link_config_of(request: admin_pb2.CreateLinkRequest) -> LinkConfig:
    """The new link's config a CreateLink asks for (defaults: admin_requests.new_link); InvalidInput naming the
    field when it is not one."""
    return admin_requests.new_link(
        request.link_id, request.mode, request.wager_amount_cents, pools_of(request.pools),
        rates_of(request.rates, request.audit.approval_ref), request.games, request.verification_threshold_cents,
        request.gaming_day_start, request.time_zone, request.dual_approval_threshold_cents)


RtpOverridden = admin_pb2.CreateLinkRequest | admin_pb2.UpdateLinkRequest | admin_pb2.SetRatesRequest \
    | admin_pb2.SetPaytableRequest


def rtp_override_of(request: RtpOverridden) -> c.RtpOverride | None:
    """The request's override of the return check (issue 33), None when unset; InvalidInput naming
    rtp_override.approval_ref when it is set without one: an override is a deliberate, approved act."""
    if not request.HasField("rtp_override"):
        return None
    o = request.rtp_override
    return c.RtpOverride(o.approval_ref, o.reason)


def update_link_of(request: admin_pb2.UpdateLinkRequest, req: c.Request, audit: c.Audit) -> c.UpdateLink:
    """UpdateLink as the service's command: unset optional fields leave the config's values unchanged."""
    threshold = request.verification_threshold_cents if request.HasField("verification_threshold_cents") else None
    dual = request.dual_approval_threshold_cents if request.HasField("dual_approval_threshold_cents") else None
    return c.UpdateLink(req, request.link_id, request.wager_amount_cents, pools_of(request.pools), threshold, audit,
                        dual, rtp_override_of(request))


def set_rates_of(request: admin_pb2.SetRatesRequest, req: c.Request, audit: c.Audit) -> c.SetRates:
    """SetRates as the service's command (the new version and its effective time are decided with the config)."""
    return c.SetRates(req, request.link_id, {x.pool: x.ppm for x in request.rates.pools},
                      request.rates.retained_ppm, request.rates.effective_at_ms, audit, rtp_override_of(request))


def paytable_entries_of(entries: Sequence[admin_pb2.PaytableEntry]) -> list[PaytableEntry]:
    """SetPaytable's entries as the domain's."""
    return [PaytableEntry(e.hand, e.pool, e.min_cents, e.percent_ppm, e.resets_pool) for e in entries]


def table_of(request: admin_pb2.RegisterTableRequest) -> TableConfig:
    """The table a RegisterTable registers."""
    return admin_requests.table_config(request.table_id, request.game, request.seats)
