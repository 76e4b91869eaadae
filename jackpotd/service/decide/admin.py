"""Admin decisions (RULES.md §3 rates, §4 paytables, §9 configuration, NZ 11.6(b) funding): every change is
a journaled entry with who, why and the approval reference. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from ...canonical import canonical_json
from ...domain.errors import FailedPrecondition, InvalidInput
from ...domain.link import LinkConfig
from ...domain.paytable import Paytable
from ...domain.postings import OPERATOR_FUNDING, Posting, pool_account, pool_legs
from ...domain.rates import RateSet
from ...domain.restructure import combine, split
from ..commands import (
    CombinePools,
    ConfigCommand,
    CreateLink,
    DecideHit,
    Fund,
    RegisterTable,
    Restructure,
    SetPaytable,
    SetRates,
    SplitPools,
    SuspendTable,
    UpdateLink,
)
from ..entries import ConfigDetail, FundDetail, RestructureDetail
from ..ports import Step
from ..replies import LinkResult
from .returns import require_returns
from .steps import step

RETROACTIVE_SLACK_MS = 1000  # a rate change "effective now" may arrive a moment late


@dataclass(frozen=True, slots=True)
class AdminState:
    """What an admin decision reads: the clock, and whether the ledger already holds the link."""

    now_ms: int
    link_known: bool = False
    balances: Mapping[str, int] = field(default_factory=dict)  # the pools, for a split or a combine


def decide_fund(cmd: Fund, config: LinkConfig, version: str, state: AdminState) -> Step:
    """NZ 11.6(b): operator funding, the seed and any top-up, into one pool."""
    config.pool_spec(cmd.pool)
    amount_uc = cmd.amount_cents * 1_000_000
    legs = [Posting(OPERATOR_FUNDING, -amount_uc), Posting(pool_account(cmd.pool), amount_uc)]
    return step(config.link_id, cmd.request, "fund", version, state.now_ms, postings=legs,
                detail=FundDetail(cmd.audit))


def kind_of(cmd: ConfigCommand) -> str:
    """The journal entry kind of a configuration change."""
    match cmd:
        case CreateLink():
            return "create_link"
        case RegisterTable():
            return "register_table"
        case SuspendTable():
            return "suspend_table" if cmd.suspended else "resume_table"
        case SetRates():
            return "set_rates"
        case SetPaytable():
            return "set_paytable"
        case UpdateLink():
            return "update_link"


def require_approval(cmd: ConfigCommand | Restructure | Fund | DecideHit) -> None:
    """What every administrative act must carry before anything is read (§9; NZ 11.6): why, and under which
    approval. Resuming a table cites the inspector's approval (NSW 14.13), a rate change and a split or combine
    the regulator's. Suspending a table is the one act without an approval reference: a safety stop of faulty
    equipment (NSW 14.13) must never wait for paperwork."""
    audit = cmd.audit
    if not audit.reason.strip():
        raise InvalidInput("audit.reason", audit.reason, "every administrative act says why (RULES.md §9)")
    if audit.approval_ref.strip():
        return
    if isinstance(cmd, SuspendTable):
        if not cmd.suspended:
            raise InvalidInput("audit.approval_ref", "", "resuming a table needs the inspector's approval reference")
        return
    if isinstance(cmd, SetRates):
        raise InvalidInput("audit.approval_ref", "", "a rate change needs the regulator's approval reference")
    if isinstance(cmd, CombinePools | SplitPools):
        raise InvalidInput("audit.approval_ref", "", "splitting or combining pools needs an approval reference")
    raise InvalidInput("audit.approval_ref", audit.approval_ref, "every administrative act cites its approval "
                       "(RULES.md §9)")


def changed(cmd: ConfigCommand, config: LinkConfig, now_ms: int) -> LinkConfig:
    """The link's config after the change."""
    match cmd:
        case CreateLink():
            return cmd.config
        case RegisterTable():
            return config.with_table(cmd.table)
        case SuspendTable():  # NSW 14.13
            return config.with_table(replace(config.table(cmd.table_id), suspended=cmd.suspended))
        case SetRates():  # §3: a new versioned rate set, effective from a time, never retroactive
            at = cmd.effective_at_ms or now_ms
            if at < now_ms - RETROACTIVE_SLACK_MS:
                raise InvalidInput("rates.effective_at_ms", at, "a rate change cannot be retroactive")
            version = max(r.version for r in config.rate_sets) + 1
            rates = RateSet(cmd.pools_ppm, cmd.retained_ppm, version, at, cmd.audit.approval_ref)
            return replace(config, rate_sets=(*config.rate_sets, rates))
        case SetPaytable():  # §4
            paytable = Paytable(cmd.game, {e.category: e for e in cmd.entries})
            return replace(config, paytables={**config.paytables, cmd.game: paytable})
        case UpdateLink():
            threshold, dual = cmd.verification_threshold_cents, cmd.dual_approval_threshold_cents
            return replace(config, wager_cents=cmd.wager_cents or config.wager_cents,
                           pools=tuple(cmd.pools) or config.pools,
                           verification_threshold_cents=(config.verification_threshold_cents if threshold is None
                                                         else threshold),
                           dual_approval_threshold_cents=(config.dual_approval_threshold_cents if dual is None
                                                          else dual))


def decide_config(cmd: ConfigCommand, config: LinkConfig, version: str, state: AdminState) -> Step:
    """§9: the new config, journaled with the audit; the live store swaps it in if `version` still holds."""
    if isinstance(cmd, CreateLink) and state.link_known:  # whatever the live store says
        raise FailedPrecondition("link_id", config.link_id, "a link with this id already exists")
    new = changed(cmd, config, state.now_ms)
    verdict = require_returns(cmd, new)  # issue 33: no game at 100% or more at reset without an approved override
    used = verdict.override if verdict is not None and verdict.over else None  # recorded only when it was needed
    as_dict = new.to_dict()
    table = cmd.table.table_id if isinstance(cmd, RegisterTable) else None
    return step(config.link_id, cmd.request, kind_of(cmd), version, state.now_ms, new_config=canonical_json(as_dict),
                detail=ConfigDetail(as_dict, cmd.audit, table, used),
                result=LinkResult(config.link_id))


def decide_restructure(cmd: Restructure, config: LinkConfig, version: str, state: AdminState) -> Step:
    """§9 (NZ 11.6A/B): the pools split or combined between rounds, every µ¢ moved, the new rates in force from
    the act. The step is refused while a round is open and when a moved pool has changed since it was read."""
    at = cmd.rates.effective_at_ms or state.now_ms
    if abs(at - state.now_ms) > RETROACTIVE_SLACK_MS:
        raise InvalidInput("rates.effective_at_ms", at, "the new rates are in force from the act itself: give 0 "
                           "(now), and make the change at the time it is to take effect")
    if isinstance(cmd, CombinePools):
        new, legs = combine(config, state.balances, cmd.jackpot, cmd.rates, state.now_ms)
        kind = "combine_pools"
    else:
        new, legs = split(config, state.balances, cmd.pools, cmd.allocation, cmd.rates, state.now_ms)
        kind = "split_pools"
    as_dict = new.to_dict()
    moved = {pool for pool, _ in pool_legs(legs)}  # zero legs too: a pool that held nothing must still hold nothing
    return step(config.link_id, cmd.request, kind, version, state.now_ms, postings=legs,
                new_config=canonical_json(as_dict), detail=RestructureDetail(as_dict, cmd.audit),
                result=LinkResult(config.link_id, new.mode),
                guards={p: state.balances.get(p, 0) for p in moved}, between_rounds=True)
