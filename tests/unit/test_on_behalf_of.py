"""A console acting for a supervisor (ARCHITECTURE.md, Security; issue 21): the guard takes ON_BEHALF_OF from the
console role only, names the person as the caller and the console as agent, and the policy authorizes the
person's role; the audit text reads `console:floor-1 for supervisor:alice`."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import pytest

from jackpotd.api.admin_acts import act_of
from jackpotd.api.gen.jackpot.v1 import admin_pb2, display_pb2
from jackpotd.api.servicers import audited
from jackpotd.auth.errors import PermissionDenied, Unauthenticated
from jackpotd.auth.guard import CALLER, Guard
from jackpotd.auth.identity import ON_BEHALF_OF, Identity, Role, acting_for, from_uri
from jackpotd.auth.tokens import issue, new_key

KEY = new_key()
ADMIN_SERVICE = "/jackpot.v1.AdminService/"
POOLS = ("/jackpot.v1.DisplayService/GetPools", "/jackpot.v1.DisplayService/WatchPools")
ACTS = ("ApproveHit", "RejectHit", "SuspendTable", "ResumeTable", "ListHits", "ListAudit")


class Call:
    """What the guard reads of a call: its metadata (no client certificate: plain text)."""

    def __init__(self, metadata: Sequence[tuple[str, str]]) -> None:
        self.metadata = tuple(metadata)

    def auth_context(self) -> dict[str, Any]:
        return {}

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return self.metadata


def call(role: Role, name: str, *behalf: str) -> Call:
    return Call([("authorization", f"Bearer {issue(KEY, role, name)}"), *((ON_BEHALF_OF, b) for b in behalf)])


def admitted(guard: Guard, method: str, context: Call, request: Any = None) -> Identity | None:
    identity = guard.caller(method, context)
    guard.authorize(method, identity, request if request is not None else display_pb2.GetPoolsRequest(link_id="l"))
    return identity


@pytest.fixture
def guard() -> Guard:
    return Guard(KEY, tables_by_token=True)


def test_a_console_on_its_own_reads_the_pools_and_nothing_else(guard: Guard) -> None:
    console = call(Role.CONSOLE, "floor-1")
    for method in POOLS:
        found = admitted(guard, method, console)
        assert found is not None and (found.role, found.actor, found.agent) == (Role.CONSOLE, "floor-1", "")
    for name in ACTS:
        with pytest.raises(PermissionDenied, match=f"console 'floor-1' may not call {name} on its own: .*"
                                                   f"{ON_BEHALF_OF}"):
            admitted(guard, ADMIN_SERVICE + name, console)


def test_a_console_for_a_supervisor_acts_as_the_supervisor(guard: Guard) -> None:
    context = call(Role.CONSOLE, "floor-1", "supervisor:alice")
    for name in ("ApproveHit", "RejectHit", "SuspendTable", "ResumeTable", "ListAudit"):
        found = admitted(guard, ADMIN_SERVICE + name, context)
        assert found is not None
        assert (found.role, found.actor, found.agent) == (Role.SUPERVISOR, "alice", "console:floor-1")
        assert found.key == "supervisor:alice"  # whose request ids they are
        assert found.audit_actor == "console:floor-1 for supervisor:alice"
        assert found.credential.startswith("jti:")  # the console's: revoking it ends the person's calls
    for method in POOLS:
        assert admitted(guard, method, context) is not None
    with pytest.raises(PermissionDenied, match="supervisor 'alice' may not call CreateLink"):
        admitted(guard, ADMIN_SERVICE + "CreateLink", context)  # an administrator's act: not a supervisor's


def test_the_audit_of_a_direct_caller_is_its_key() -> None:
    alice = Identity(Role.SUPERVISOR, "alice", "token")
    assert (alice.agent, alice.audit_actor) == ("", "supervisor:alice")


@pytest.mark.parametrize("role", [Role.SUPERVISOR, Role.ADMIN, Role.DISPLAY, Role.FINANCE, Role.TABLE])
def test_the_header_from_any_other_role_is_refused(guard: Guard, role: Role) -> None:
    with pytest.raises(PermissionDenied, match=f"{ON_BEHALF_OF} is taken from a console only, not from "
                                               f"{role.value} 'x-1'"):
        admitted(guard, ADMIN_SERVICE + "SuspendTable", call(role, "x-1", "supervisor:alice"))


@pytest.mark.parametrize("value", ["", "alice", "supervisor", "supervisor:", "supervisor:al ice", "boss:alice",
                                   "supervisor:" + "a" * 65, "supervisor:alice:x", "SUPERVISOR:alice"])
def test_a_value_that_names_no_one_is_unauthenticated(guard: Guard, value: str) -> None:
    with pytest.raises(Unauthenticated, match=f"{ON_BEHALF_OF}=.* names no one: expected supervisor:<name>"):
        admitted(guard, ADMIN_SERVICE + "SuspendTable", call(Role.CONSOLE, "floor-1", value))


@pytest.mark.parametrize("value", ["admin:bob", "finance:office", "display:sign", "console:floor-2", "table:t-1"])
def test_a_console_acts_for_supervisors_only(guard: Guard, value: str) -> None:
    with pytest.raises(PermissionDenied, match=f"{ON_BEHALF_OF}='{value}': a console acts for a supervisor only"):
        admitted(guard, ADMIN_SERVICE + "SuspendTable", call(Role.CONSOLE, "floor-1", value))


def test_one_person_per_call(guard: Guard) -> None:
    with pytest.raises(Unauthenticated, match=f"{ON_BEHALF_OF} is given 2 times"):
        admitted(guard, ADMIN_SERVICE + "SuspendTable", call(Role.CONSOLE, "floor-1", "supervisor:a",
                                                             "supervisor:b"))


def test_a_revoked_or_expired_console_acts_for_no_one(guard: Guard) -> None:
    context = call(Role.CONSOLE, "floor-1", "supervisor:alice")
    found = admitted(guard, ADMIN_SERVICE + "SuspendTable", context)
    assert found is not None
    guard.revoke([found.credential])
    with pytest.raises(Unauthenticated, match="was revoked"):
        admitted(guard, ADMIN_SERVICE + "SuspendTable", context)
    expired = Identity(Role.CONSOLE, "floor-1", "token", "jti:x", time.time() - 1)
    assert acting_for(expired, "supervisor:alice").expires == expired.expires  # the guard refuses it as expired


def test_a_console_certificate_names_a_console() -> None:
    found = from_uri("urn:jackpot:console:floor-1")
    assert found is not None and (found.role, found.actor) == (Role.CONSOLE, "floor-1")


def test_the_audit_row_and_the_ledger_audit_name_both() -> None:
    person = acting_for(Identity(Role.CONSOLE, "floor-1", "token", "jti:c"), "supervisor:alice")
    request = admin_pb2.SuspendTableRequest(request_id="r-1", table_id="t-1",
                                            audit=admin_pb2.Audit(actor="someone", reason="dealer change"))
    act = act_of("SuspendTable", request, person, "OK", "")
    assert (act.actor, act.role, act.agent) == ("alice", "supervisor", "console:floor-1")
    token = CALLER.set(person)
    try:
        req, audit = audited(request)
    finally:
        CALLER.reset(token)
    assert audit.actor == "console:floor-1 for supervisor:alice"
    assert audit.actor.rsplit(" for ", 1)[-1] == "supervisor:alice"  # what dual control compares approvers by
    assert req.caller == "supervisor:alice"  # the request id is the person's
