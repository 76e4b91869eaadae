"""Issue 19, credentials: a token names an id of the grammar, carries an id of its own to revoke it by, lives no
longer than the maximum; a revoked or expired credential is refused, and its open stream ends."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import jwt
import pytest

from jackpotd.auth.errors import Unauthenticated
from jackpotd.auth.guard import Guard, identity_of_certificate
from jackpotd.auth.identity import Role
from jackpotd.auth.tokens import ALGORITHM, ISSUER, issue, new_key, token_id, verify

from .test_guard import certificate

KEY = new_key()
DAY = 86400


def signed(**claims: Any) -> str:
    now = int(time.time())
    return jwt.encode({"iss": ISSUER, "sub": "floor", "role": "supervisor", "iat": now, "exp": now + DAY,
                       "jti": "j1", **claims}, KEY, algorithm=ALGORITHM)


def test_a_token_carries_an_id_and_proves_its_holder() -> None:
    token = issue(KEY, Role.SUPERVISOR, "floor")
    identity, expires = verify(KEY, token)
    assert (identity.role, identity.actor, identity.key) == (Role.SUPERVISOR, "floor", "supervisor:floor")
    assert identity.credential == f"jti:{token_id(token)}" and expires == identity.expires > time.time()
    assert issue(KEY, Role.SUPERVISOR, "floor") != token  # each token its own id


@pytest.mark.parametrize(("claims", "why"), [
    ({"sub": " "}, "not an id"),
    ({"sub": "a:b"}, "not an id"),
    ({"exp": int(time.time()) + 100 * 365 * DAY}, "more than the 30 allowed"),
    ({"iat": int(time.time()) + 40 * DAY, "exp": int(time.time()) + 41 * DAY}, "not yet valid"),
    ({"jti": ""}, "no valid iat or jti"),
])
def test_tokens_out_of_bounds_are_refused(claims: dict[str, Any], why: str) -> None:
    with pytest.raises(Unauthenticated, match=why):
        verify(KEY, signed(**claims))


@pytest.mark.parametrize("missing", ["jti", "iat"])
def test_a_token_without_an_id_or_an_issue_time_is_refused(missing: str) -> None:
    now = int(time.time())
    claims = {"iss": ISSUER, "sub": "floor", "role": "supervisor", "iat": now, "exp": now + DAY, "jti": "j1"}
    del claims[missing]
    with pytest.raises(Unauthenticated):
        verify(KEY, jwt.encode(claims, KEY, algorithm=ALGORITHM))


def test_the_maximum_lifetime_is_a_setting() -> None:
    token = signed(exp=int(time.time()) + 60 * DAY)
    with pytest.raises(Unauthenticated):
        verify(KEY, token)
    assert verify(KEY, token, max_lifetime=90 * DAY)[0].actor == "floor"


def test_a_certificate_identity_names_its_serial_and_expiry() -> None:
    found = identity_of_certificate(certificate("urn:jackpot:table:t-7"))
    assert found is not None and found.credential.startswith("serial:") and found.expires > time.time()


class Context:
    """What the guard reads of a call: its TLS peer (none) and its metadata."""

    def __init__(self, token: str) -> None:
        self.token = token

    def auth_context(self) -> dict[str, Any]:
        return {}

    def invocation_metadata(self) -> list[tuple[str, str]]:
        return [("authorization", f"Bearer {self.token}")]


def test_a_revoked_token_is_refused_at_once() -> None:
    guard = Guard(KEY, tables_by_token=False)
    token = issue(KEY, Role.DISPLAY, "sign")
    assert guard.identify(Context(token)) is not None  # verified and cached
    guard.revoke([f"jti:{token_id(token)}"])
    with pytest.raises(Unauthenticated, match="revoked"):
        guard.identify(Context(token))


async def test_an_open_stream_ends_when_its_credential_is_revoked() -> None:
    guard = Guard(KEY, tables_by_token=False)
    token = issue(KEY, Role.DISPLAY, "sign")
    identity = guard.identify(Context(token))
    assert identity is not None
    closed = asyncio.Event()

    async def quiet() -> AsyncIterator[int]:
        try:
            yield 1
            await asyncio.Event().wait()  # a stream with nothing more to say
            yield 2
        finally:
            closed.set()

    seen = []
    first = asyncio.Event()

    async def watch() -> None:
        async for item in guard.while_valid(identity, quiet()):
            seen.append(item)
            first.set()

    task = asyncio.create_task(watch())
    await asyncio.wait_for(first.wait(), 5)  # the stream's first item
    assert guard.sweep() == 0  # still valid: nothing ends
    guard.revoke([identity.credential])
    assert guard.sweep() == 1
    with pytest.raises(Unauthenticated, match="revoked"):
        await asyncio.wait_for(task, 5)
    assert closed.is_set() and seen == [1]


async def test_an_open_stream_ends_when_its_credential_expires() -> None:
    guard = Guard(KEY, tables_by_token=False)
    identity = guard.identify(Context(issue(KEY, Role.DISPLAY, "sign", ttl_seconds=60)))
    assert identity is not None

    async def endless() -> AsyncIterator[int]:
        while True:
            await asyncio.sleep(3600)
            yield 0

    task = asyncio.create_task(anext(guard.while_valid(identity, endless())))
    await asyncio.sleep(0)  # one turn of the loop: the task runs into its wait, its stream watched
    assert guard.sweep(now=time.time() + 120) == 1
    with pytest.raises(Unauthenticated, match="expired"):
        await asyncio.wait_for(task, 5)


def _started_here(task: asyncio.Task[Any]) -> bool:
    """Whether a task runs code of the guard or of this test (not of a server an earlier test left running, whose
    lease and pool tasks come and go on the same loop)."""
    code = getattr(task.get_coro(), "cr_code", None)
    return code is not None and Path(code.co_filename).name in {"guard.py", Path(__file__).name}


async def test_a_cancelled_call_stops_and_closes_its_stream() -> None:
    """A client that goes away (the call cancelled) leaves no task behind and the stream's own cleanup runs."""
    guard = Guard(KEY, tables_by_token=False)
    identity = guard.identify(Context(issue(KEY, Role.DISPLAY, "sign")))
    assert identity is not None
    closed = asyncio.Event()

    waiting = asyncio.Event()

    async def quiet() -> AsyncIterator[int]:
        try:
            yield 1
            waiting.set()
            await asyncio.Event().wait()
            yield 2
        finally:
            closed.set()

    async def watch() -> None:
        async for _ in guard.while_valid(identity, quiet()):
            pass

    before = asyncio.all_tasks()  # others' tasks (a server left by an earlier test) come and go: only ours count
    task = asyncio.create_task(watch())
    await asyncio.wait_for(waiting.wait(), 5)  # the stream is open and waiting for its next item
    # the call alone: a stream is watched without a task of its own (a task of the guard's or of this test's)
    ours = {t for t in asyncio.all_tasks() - before if _started_here(t)}
    assert ours == {task}
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert closed.is_set()
    assert all(t.done() for t in ours) and not guard._streams


async def test_a_stream_ended_while_its_message_is_sent_asks_for_no_other() -> None:
    """The sweep ends a stream between two messages (its caller holds one): the next step is Unauthenticated, and
    the stream is not asked for another message."""
    guard = Guard(KEY, tables_by_token=False)
    identity = guard.identify(Context(issue(KEY, Role.DISPLAY, "sign")))
    assert identity is not None
    asked = []

    async def counting() -> AsyncIterator[int]:
        for n in range(10):
            asked.append(n)
            yield n

    stream = guard.while_valid(identity, counting())
    assert await anext(stream) == 0
    guard.revoke([identity.credential])
    assert guard.sweep() == 1
    with pytest.raises(Unauthenticated, match="revoked"):
        await anext(stream)
    assert asked == [0] and not guard._streams


async def test_a_call_cancelled_as_its_credential_ends_stays_cancelled() -> None:
    """A sweep and the call's own cancellation at once: the call ends cancelled (the server's cancellation is not
    turned into Unauthenticated and lost)."""
    guard = Guard(KEY, tables_by_token=False)
    identity = guard.identify(Context(issue(KEY, Role.DISPLAY, "sign")))
    assert identity is not None
    waiting = asyncio.Event()

    async def quiet() -> AsyncIterator[int]:
        waiting.set()
        await asyncio.Event().wait()
        yield 1

    task = asyncio.create_task(anext(guard.while_valid(identity, quiet())))
    await asyncio.wait_for(waiting.wait(), 5)
    guard.revoke([identity.credential])
    assert guard.sweep() == 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_stream_that_swallows_the_interruption_still_ends() -> None:
    """A stream that catches the cancellation the sweep interrupts it with and goes on: it ends Unauthenticated all
    the same, and its task is left with no cancellation pending."""
    guard = Guard(KEY, tables_by_token=False)
    identity = guard.identify(Context(issue(KEY, Role.DISPLAY, "sign", ttl_seconds=60)))
    assert identity is not None
    waiting = asyncio.Event()

    async def stubborn() -> AsyncIterator[int]:
        try:
            waiting.set()
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            pass
        yield 1

    async def watch() -> int:
        with pytest.raises(Unauthenticated, match="expired"):
            await anext(guard.while_valid(identity, stubborn()))
        me = asyncio.current_task()
        assert me is not None
        return me.cancelling()

    task = asyncio.create_task(watch())
    await asyncio.wait_for(waiting.wait(), 5)
    assert guard.sweep(now=time.time() + 120) == 1
    assert await asyncio.wait_for(task, 5) == 0
