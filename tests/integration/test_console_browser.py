"""The floor's console in a real browser (issue 21): Debian's headless Chromium, driven by Playwright, logs in to
`jackpot-console` served in-process against the session's jackpotd, as the console (its own `console`
credential) acting for each person. A supervisor approves a pending hit and the sign turns from PENDING to
VERIFIED AND PAID; another rejects one; under dual control the same person's second approval is refused and a
second person's pays; a form without its CSRF token does nothing; an idle session goes back to the login form;
the sixth failed login in a minute is refused; a new pending hit appears on an open page within seconds, while
an open page with nothing new adds no ListHits to the trail; a person removed from the users file is sent to the
login form at their next click. One browser and one jackpotd for the module.
A screenshot of the console goes to artifacts/console.png."""

from __future__ import annotations

import contextlib
import functools
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc
import pytest_asyncio
from aiohttp import web
from jackpot_console import users
from jackpot_console.app import ConsoleSettings, make_app
from jackpot_console.cli import tls_context
from jackpot_floor.calls import floor_channel
from jackpot_signage.app import make_app as make_sign
from jackpot_signage.cli import sign_channel

from jackpotd.api.gen.jackpot.v1 import admin_pb2, display_pb2
from jackpotd.auth.credentials import RoleCredential
from jackpotd.auth.identity import Role
from jackpotd.auth.issue import IssueOrder, issue_into
from jackpotd.embedded import free_port

from ..conftest import unique
from .browser import ARGS, CHROMIUM, require_chromium
from .harness import AUDIT, Client, eventually, rid, token

require_chromium()

from playwright.async_api import Browser, Page, async_playwright  # noqa: E402

ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"
ROYAL = ["As", "Ks", "Qs", "Js", "Ts"]
PASSWORDS = {"alice": "alice's long password", "bob": "bob's long password"}
THRESHOLD = 500_000  # $5,000: a royal waits for a supervisor
DUAL = 1_500_000  # $15,000: and above it, for two
RESET = 1_000_000  # MAJOR's reset: a royal on a pool just reset is about $10,000 (one approval)


class Floor:
    """The module's link and table on the session's jackpotd, and consoles serving it."""

    def __init__(self, client: Client, target: str, users_file: Path) -> None:
        self.client, self.target, self.users_file = client, target, users_file
        self.link, self.table = unique("floor"), unique("t")
        self.rounds = 0
        self.base = ""  # the module's console
        self.runners: list[web.AppRunner] = []

    async def setup(self) -> None:
        c = self.client
        await c.create_link(self.link, resets={"MAJOR": RESET, "MINOR": 100_000}, threshold=THRESHOLD)
        await c.admin.UpdateLink(admin_pb2.UpdateLinkRequest(request_id=rid(), link_id=self.link,
                                                             dual_approval_threshold_cents=DUAL, audit=AUDIT))
        await c.register(self.table, self.link)

    async def pending_royal(self, major_cents: int) -> str:
        """A royal flush held for verification, MAJOR topped up to about `major_cents` first; its hit id."""
        c = self.client
        shown = (await c.pools(self.link))["MAJOR"].amount_cents
        if major_cents > shown:
            await c.fund(self.link, "MAJOR", major_cents - shown)
        self.rounds += 1
        await c.commit(self.table, f"r{self.rounds}", [1])
        settled = await c.settle(self.table, f"r{self.rounds}", {1: ROYAL})
        assert [p.status for p in settled.payouts] == ["PENDING"], settled
        return str(settled.payouts[0].hit_id)

    async def status(self, hit_id: str) -> str:
        hits = (await self.client.admin.ListHits(admin_pb2.ListHitsRequest(link_id=self.link))).hits
        return next(h.status for h in hits if h.hit_id == hit_id)

    async def suspended(self) -> bool:
        resp = await self.client.display.GetPools(display_pb2.GetPoolsRequest(link_id=self.link))
        return next(t.suspended for t in resp.tables if t.table_id == self.table)

    async def serve(self, app: web.Application, tls: ssl.SSLContext | None = None) -> str:
        runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=1)
        await runner.setup()
        port = free_port()
        await web.TCPSite(runner, "127.0.0.1", port, ssl_context=tls).start()
        self.runners.append(runner)
        return f"{'https' if tls else 'http'}://127.0.0.1:{port}"

    async def console(self, session_seconds: float = 600, tls: ssl.SSLContext | None = None) -> str:
        """A console of the link (the console's own credential, console:floor-1); its base URL."""
        credential = RoleCredential(token=token(Role.CONSOLE, "floor-1"))

        def channel() -> grpc.aio.Channel:
            return floor_channel(credential, self.target)

        settings = ConsoleSettings(self.link, self.users_file, session_seconds, tls=tls is not None,
                                   client_certificates=tls is not None)
        return await self.serve(make_app(settings, channel), tls)

    async def sign(self) -> str:
        credential = RoleCredential(token=token(Role.DISPLAY, "sign"))
        app = make_sign(self.target, lambda target: sign_channel(credential, target), [self.link],
                        celebrate_seconds=4)
        return f"{await self.serve(app)}/links/{self.link}"

    async def close(self) -> None:
        for runner in self.runners:
            await runner.cleanup()


@pytest_asyncio.fixture(scope="module")
async def floor(client: Client, target: str, tmp_path_factory: Any) -> AsyncIterator[Floor]:
    users_file = tmp_path_factory.mktemp("console") / "users.json"
    for name, password in PASSWORDS.items():
        users.add(users_file, name, password)
    f = Floor(client, target, users_file)
    await f.setup()
    f.base = await f.console()
    yield f
    await f.close()


@pytest_asyncio.fixture(scope="module")
async def chromium() -> AsyncIterator[Browser]:
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield browser
        with contextlib.suppress(Exception):
            await browser.close()


@pytest_asyncio.fixture
async def person(chromium: Browser) -> AsyncIterator[Callable[[], Awaitable[Page]]]:
    """A fresh browser context (cookies of its own) per person; the pages must raise no script error."""
    contexts = []
    errors: list[str] = []

    async def open_page(**options: Any) -> Page:
        context = await chromium.new_context(viewport={"width": 1400, "height": 900}, **options)
        contexts.append(context)
        page = await context.new_page()
        page.on("pageerror", lambda e: errors.append(str(e)))
        return page

    yield open_page
    for context in contexts:
        with contextlib.suppress(Exception):
            await context.close()
    assert not errors, f"the console's page raised: {errors}"


async def log_in(page: Page, base: str, name: str, password: str | None = None) -> None:
    await page.goto(f"{base}/login")
    await page.fill("input[name=name]", name)
    await page.fill("input[name=password]", PASSWORDS[name] if password is None else password)
    await page.click("form.login button")


async def flash(page: Page) -> str:
    return str(await page.inner_text("main .flash"))


def row(hit_id: str) -> str:
    return f'tr[data-hit-id="{hit_id}"]'


async def approve(page: Page, base: str, hit_id: str, ref: str) -> str:
    await page.goto(f"{base}/pending")
    await page.fill(f"{row(hit_id)} form.approve input[name=approval_ref]", ref)
    await page.click(f"{row(hit_id)} form.approve button")
    await page.wait_for_url(f"{base}/pending")
    return await flash(page)


async def test_a_supervisor_approves_a_pending_hit_and_the_sign_shows_it_paid(floor: Floor, person: Any) -> None:
    base = floor.base
    sign = await person()
    await sign.goto(await floor.sign())
    await eventually(lambda: sign.is_visible("[data-pool=MAJOR]"), 15, "the sign showing the pools")
    hit_id = await floor.pending_royal(0)
    await eventually(lambda: sign.is_visible("text=PENDING VERIFICATION"), 15, "the sign saying PENDING")
    page = await person()
    await log_in(page, base, "alice")
    await page.wait_for_url(f"{base}/pending")
    text = await page.inner_text(row(hit_id))
    assert "Royal flush" in text and "A♠ K♠ Q♠ J♠ 10♠" in text and "0 of 1" in text, text
    said = await approve(page, base, hit_id, "CCTV-0042")
    assert said.startswith("Paid: Royal flush $"), said
    assert await floor.status(hit_id) == "PAID"
    assert not await page.is_visible(row(hit_id))
    await eventually(lambda: sign.is_visible("text=VERIFIED AND PAID"), 15, "the sign saying VERIFIED AND PAID")
    await page.click("nav >> text=Audit trail")
    first = await page.inner_text("#live tbody tr")
    assert "console:floor-1 for supervisor:alice" in first and "ApproveHit" in first and "CCTV-0042" in first, first


async def test_a_supervisor_rejects_a_pending_hit(floor: Floor, person: Any) -> None:
    base = floor.base
    hit_id = await floor.pending_royal(0)
    page = await person()
    await log_in(page, base, "bob")
    await page.wait_for_url(f"{base}/pending")
    await page.fill(f"{row(hit_id)} form.reject input[name=reason]", "cards disturbed before verification")
    await page.fill(f"{row(hit_id)} form.reject input[name=approval_ref]", "CCTV-0050")
    await page.click(f"{row(hit_id)} form.reject button")
    await page.wait_for_url(f"{base}/pending")
    said = await flash(page)
    assert said.startswith("Rejected: Royal flush $"), said
    assert await floor.status(hit_id) == "REJECTED"


async def test_dual_control_needs_two_different_supervisors(floor: Floor, person: Any) -> None:
    base = floor.base
    hit_id = await floor.pending_royal(DUAL + 500_000)
    alice, bob = await person(), await person()
    await log_in(alice, base, "alice")
    await log_in(bob, base, "bob")
    said = await approve(alice, base, hit_id, "CCTV-0043")
    assert said.startswith("1 of 2 approvals recorded for Royal flush"), said
    assert "1 of 2" in await alice.inner_text(f"{row(hit_id)} .approvals")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    await alice.screenshot(path=str(ARTIFACTS / "console.png"), full_page=True)
    said = await approve(alice, base, hit_id, "CCTV-0043")  # the same person again
    assert said.startswith("Refused (FAILED_PRECONDITION): ") and "dual control" in said, said
    assert await floor.status(hit_id) == "PENDING"
    said = await approve(bob, base, hit_id, "CCTV-0044")
    assert said.startswith("Paid: Royal flush $") and "alice" in said and "bob" in said, said
    assert await floor.status(hit_id) == "PAID"


async def test_a_form_without_its_csrf_token_does_nothing(floor: Floor, person: Any) -> None:
    base = floor.base
    page = await person()
    await log_in(page, base, "alice")
    await page.goto(f"{base}/tables")
    suspend = f'tr[data-table-id="{floor.table}"] form.suspend'
    await page.fill(f"{suspend} input[name=reason]", "dealer change")
    await page.evaluate(f"document.querySelector('{suspend} input[name=csrf]').remove()")
    async with page.expect_response(f"{base}/suspend") as answer:
        await page.click(f"{suspend} button")
    assert (await answer.value).status == 403
    assert "CSRF token is missing or wrong; nothing was done" in await page.inner_text("body")
    assert not await floor.suspended()
    await page.goto(f"{base}/tables")  # with its token, the same form suspends the table, and resumes it
    await page.fill(f"{suspend} input[name=reason]", "dealer change")
    await page.click(f"{suspend} button")
    await page.wait_for_url(f"{base}/tables")
    assert (await flash(page)).startswith(f"Table {floor.table} suspended"), await flash(page)
    assert await floor.suspended()
    resume = f'tr[data-table-id="{floor.table}"] form.resume'
    await page.fill(f"{resume} input[name=reason]", "dealer in place")
    await page.fill(f"{resume} input[name=approval_ref]", "INSP-7")
    await page.click(f"{resume} button")
    await page.wait_for_url(f"{base}/tables")
    assert (await flash(page)).startswith(f"Table {floor.table} resumed"), await flash(page)
    assert not await floor.suspended()


async def test_an_idle_session_goes_back_to_the_login_form(floor: Floor, person: Any) -> None:
    base = await floor.console(session_seconds=1.0)
    page = await person()
    await log_in(page, base, "alice")
    await page.wait_for_url(f"{base}/pending")
    await eventually(lambda: "/login" in page.url, 10, "the idle page sent back to the login form")
    await page.wait_for_load_state()
    assert "Your session expired after 1 s without activity" in await page.inner_text("main")
    await page.goto(f"{base}/pending")  # and it stays logged out
    assert page.url.startswith(f"{base}/login")


async def test_the_sixth_failed_login_in_a_minute_is_refused(floor: Floor, person: Any) -> None:
    base = await floor.console()  # a console of its own: its limiter counts this test's failures only
    page = await person()

    def posted(r: Any) -> bool:
        return bool(r.url == f"{base}/login" and r.request.method == "POST")

    for _ in range(5):
        async with page.expect_response(posted) as answer:
            await log_in(page, base, "bob", "a wrong password")
        assert (await answer.value).status == 401
        assert "Wrong name or password" in await page.inner_text("main")
    async with page.expect_response(posted) as answer:
        await log_in(page, base, "bob")  # the right password, refused all the same
    assert (await answer.value).status == 429
    assert "Too many failed logins" in await page.inner_text("main")
    assert page.url == f"{base}/login"


async def test_a_supervisor_in_the_users_file_logs_in_with_a_client_certificate(floor: Floor, person: Any,
                                                                                 tmp_path: Path) -> None:
    issue_into(tmp_path, IssueOrder(roles=[(Role.SUPERVISOR, "alice"), (Role.SUPERVISOR, "mallory")]))
    base = await floor.console(tls=tls_context(str(tmp_path / "server.pem"), str(tmp_path / "server.key"),
                                               str(tmp_path / "ca.pem")))

    async def holding(name: str) -> Page:
        return await person(ignore_https_errors=True, client_certificates=[{
            "origin": base, "certPath": str(tmp_path / f"roles/supervisor-{name}.pem"),
            "keyPath": str(tmp_path / f"roles/supervisor-{name}.key")}])

    alice, mallory = await holding("alice"), await holding("mallory")  # mallory is not in the users file
    await mallory.goto(f"{base}/login")
    assert not await mallory.is_visible("form.certificate")
    await alice.goto(f"{base}/login")
    await alice.click("text=Log in as alice with your certificate")
    await alice.wait_for_url(f"{base}/pending")
    assert "(acting as supervisor:alice)" in await alice.inner_text("header")


async def list_hits_reads(floor: Floor, actor: str) -> int:
    """How many ListHits the trail holds by `actor` on the module's link (each refresh that read jackpotd)."""
    resp = await floor.client.admin.ListAudit(admin_pb2.ListAuditRequest(link_id=floor.link, actor=actor,
                                                                         method="ListHits", limit=1000))
    return len(resp.rows)


async def refreshed(page: Page, times: int) -> None:
    """Wait for console.js to refresh the page's live part `times` more times (2 s apart)."""
    async def since(last: int) -> bool:
        return int(await page.get_attribute("#live", "data-refreshed") or 0) > last

    for _ in range(times):
        last = int(await page.get_attribute("#live", "data-refreshed") or 0)
        await eventually(functools.partial(since, last), 10, "the page's live part refreshed")


async def test_an_open_pending_page_shows_a_new_hit_within_seconds_and_adds_no_reads_while_nothing_happens(
        floor: Floor, person: Any) -> None:
    base = floor.base
    page = await person()
    await log_in(page, base, "alice")
    await page.wait_for_url(f"{base}/pending")
    await refreshed(page, 1)
    before = await list_hits_reads(floor, "alice")
    assert before >= 1  # the page's own load read the hits
    await refreshed(page, 3)  # about 6 s open with no new hit: every refresh from the console's cache
    assert await list_hits_reads(floor, "alice") == before
    hit_id = await floor.pending_royal(0)
    await page.wait_for_selector(row(hit_id), timeout=5_000)  # no reload: the live part read it again
    assert "Royal flush" in await page.inner_text(row(hit_id))
    assert await list_hits_reads(floor, "alice") > before
    await floor.client.admin.RejectHit(admin_pb2.RejectHitRequest(request_id=rid(), hit_id=hit_id,
                                                                  reason="test over", audit=AUDIT))


async def test_a_person_removed_from_the_users_file_is_logged_out_at_their_next_click(floor: Floor,
                                                                                      person: Any) -> None:
    base = floor.base
    users.add(floor.users_file, "carol", "carol's long password")
    page = await person()
    await log_in(page, base, "carol", "carol's long password")
    await page.wait_for_url(f"{base}/pending")
    await page.click("nav >> text=Tables")
    await page.fill(f'tr[data-table-id="{floor.table}"] form.suspend input[name=reason]', "typing")  # no refresh
    users.remove(floor.users_file, "carol")
    await page.click("nav >> text=Audit trail")
    await page.wait_for_url(f"{base}/login?removed=1")
    assert "the console's users file no longer lists you" in await page.inner_text("main")
    await page.goto(f"{base}/pending")  # the session is over
    assert page.url.startswith(f"{base}/login")
    assert not await floor.suspended()
