"""The admin decisions (service/decide/admin.py), pure: every change is a journaled entry with its audit."""

from __future__ import annotations

import json

import pytest

from jackpotd.domain.errors import FailedPrecondition, InvalidInput, NotFound
from jackpotd.domain.link import LinkConfig, TableConfig
from jackpotd.domain.paytable import PaytableEntry
from jackpotd.domain.pools import MAJOR, MINOR, RESERVE, PoolSpec
from jackpotd.service.commands import (
    Audit,
    CreateLink,
    DecideHit,
    Fund,
    RegisterTable,
    Request,
    SetPaytable,
    SetRates,
    SuspendTable,
    UpdateLink,
)
from jackpotd.service.decide.admin import AdminState, decide_config, decide_fund, require_approval
from jackpotd.service.entries import entry_form
from jackpotd.service.ports import NEW_LINK as NEW
from jackpotd.service.replies import stored_form as stored

from .test_decide_table import NOW, UC, link

AUDIT = Audit("sup", "why", "APP-9")
STATE = AdminState(NOW)


def req(rid: str = "a1") -> Request:
    return Request(rid, {"x": rid})


def new_config(step_config: str) -> LinkConfig:
    return LinkConfig.from_dict(json.loads(step_config))


def test_fund_moves_operator_money_into_the_pool_with_its_audit() -> None:
    step = decide_fund(Fund(req(), "L", MINOR, 12_345, AUDIT), link(), "v1", STATE)
    assert dict(step.deltas) == {MINOR: 12_345 * UC}
    assert dict((a, v) for a, v in entry_form(step.entry)["postings"]) == {"operator_funding": -12_345 * UC,
                                                                 "pool:MINOR": 12_345 * UC}
    assert entry_form(step.entry)["audit"] == {"actor": "sup", "reason": "why", "approval_ref": "APP-9"}
    assert entry_form(step.entry)["kind"] == "fund" and step.config_version == "v1"


def test_fund_of_an_unknown_pool_names_it() -> None:
    with pytest.raises(InvalidInput, match="pool"):
        decide_fund(Fund(req(), "L", "BONUS", 1, AUDIT), link(), "v1", STATE)


def test_create_link_expects_no_config_and_is_refused_when_the_ledger_holds_it() -> None:
    config = link()
    step = decide_config(CreateLink(req(), config, AUDIT), config, NEW, STATE)
    assert step.config_version == NEW and entry_form(step.entry)["kind"] == "create_link"
    assert new_config(step.new_config) == config and stored(step.result) == {"link_id": "L"}
    with pytest.raises(FailedPrecondition, match="already exists"):
        decide_config(CreateLink(req(), config, AUDIT), config, NEW, AdminState(NOW, link_known=True))


def test_register_table_adds_it() -> None:
    step = decide_config(RegisterTable(req(), "L", TableConfig("T2", "caribbean-stud", 5), AUDIT), link(), "v1",
                         STATE)
    assert new_config(step.new_config).tables["T2"].seats == 5 and entry_form(step.entry)["table"] == "T2"


def test_suspend_then_resume_which_needs_the_approval() -> None:
    step = decide_config(SuspendTable(req(), "T", True, Audit("sup", "fault", "")), link(), "v1", STATE)
    assert new_config(step.new_config).tables["T"].suspended and entry_form(step.entry)["kind"] == "suspend_table"
    suspended = link(suspended=True)
    with pytest.raises(InvalidInput, match=r"audit\.approval_ref"):
        require_approval(SuspendTable(req(), "T", False, Audit("sup", "fixed", "")))
    require_approval(SuspendTable(req(), "T", True, Audit("sup", "fault", "")))  # suspending needs none
    step = decide_config(SuspendTable(req(), "T", False, AUDIT), suspended, "v2", STATE)
    assert not new_config(step.new_config).tables["T"].suspended and entry_form(step.entry)["kind"] == "resume_table"


def test_suspend_of_an_unknown_table_is_not_found() -> None:
    with pytest.raises(NotFound):
        decide_config(SuspendTable(req(), "nope", True, AUDIT), link(), "v1", STATE)


def test_set_rates_adds_a_version_effective_now_and_never_retroactive() -> None:
    rates = {MAJOR: 150_000, MINOR: 100_000, RESERVE: 50_000}
    step = decide_config(SetRates(req(), "L", rates, 700_000, 0, AUDIT), link(), "v1", STATE)
    latest = new_config(step.new_config).rate_sets[-1]
    assert (latest.version, latest.effective_at_ms, dict(latest.pools_ppm)) == (2, NOW, rates)
    assert latest.approval_ref == "APP-9"
    with pytest.raises(InvalidInput, match="retroactive"):
        decide_config(SetRates(req(), "L", rates, 700_000, NOW - 60_000, AUDIT), link(), "v1", STATE)
    with pytest.raises(InvalidInput, match=r"audit\.approval_ref"):
        require_approval(SetRates(req(), "L", rates, 700_000, 0, Audit("a", "b", "")))


def test_set_rates_that_do_not_sum_are_refused() -> None:
    with pytest.raises(InvalidInput):
        decide_config(SetRates(req(), "L", {MAJOR: 1, MINOR: 1, RESERVE: 1}, 1, 0, AUDIT), link(), "v1", STATE)


def test_set_paytable_replaces_the_game_paytable() -> None:
    entries = [PaytableEntry("flush", MINOR, 5_000)]
    step = decide_config(SetPaytable(req(), "L", "caribbean-stud", entries, AUDIT), link(), "v1", STATE)
    table = new_config(step.new_config).paytables["caribbean-stud"]
    assert list(table.entries) == ["flush"] and table.entries["flush"].min_cents == 5_000


def test_update_link_changes_only_what_it_names() -> None:
    step = decide_config(UpdateLink(req(), "L", 200, [], None, AUDIT), link(threshold=7), "v1", STATE)
    changed = new_config(step.new_config)
    assert changed.wager_cents == 200 and changed.verification_threshold_cents == 7 and changed.pools == link().pools
    pools = [PoolSpec(MAJOR, 2_000_000), PoolSpec(MINOR, 100_000), PoolSpec(RESERVE)]
    step = decide_config(UpdateLink(req(), "L", 0, pools, 0, AUDIT), link(threshold=7), "v1", STATE)
    changed = new_config(step.new_config)
    assert changed.wager_cents == 100 and changed.verification_threshold_cents == 0
    assert changed.pools[0].reset_cents == 2_000_000


@pytest.mark.parametrize("cmd", [
    Fund(req(), "L", MAJOR, 100, Audit("a", "seed", "")),
    SetPaytable(req(), "L", "caribbean-stud", [], Audit("a", "promotion", "")),
    DecideHit(req(), "L:T:r1:1", True, "", Audit("a", "verified", "")),
])
def test_every_administrative_act_cites_its_approval(cmd: Fund | SetPaytable | DecideHit) -> None:
    with pytest.raises(InvalidInput, match=r"^audit\.approval_ref"):
        require_approval(cmd)


@pytest.mark.parametrize("reason", ["", "   "])
def test_every_administrative_act_says_why(reason: str) -> None:
    for cmd in (Fund(req(), "L", MAJOR, 100, Audit("a", reason, "APP-1")),
                SuspendTable(req(), "T", True, Audit("a", reason, ""))):
        with pytest.raises(InvalidInput, match=r"^audit\.reason"):
            require_approval(cmd)
