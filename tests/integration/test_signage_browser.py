"""Floor signs in a real browser (issue: Floor signage): Debian's headless Chromium, driven by Playwright, reads
the kiosk page of `jackpot-signage` served in-process against an in-process jackpotd on real stores. The page
shows what GetPools returns, paces up to a commit's new amount, celebrates a royal flush then shows the reset
value, says LINK OFFLINE while jackpotd is down and recovers by itself, and never shows a hit the ledger does not
hold. Screenshots go to artifacts/signage/<test>.png (1920x1080; one at 3840x2160)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import asyncpg
import pytest_asyncio
from playwright.async_api import Page

from jackpotd.api.gen.jackpot.v1 import admin_pb2
from jackpotd.store import keys

from ..conftest import Isolated, unique
from .conftest import Private, start_private
from .harness import AUDIT, Client, Pulse, eventually, rid, set_online
from .signs import CELEBRATE, HD, UHD, SignStarter, browser, showing, shown, signs, visible
from .signs import screenshot as save

__all__ = ["browser", "signs"]  # fixtures

ROYAL = ["As", "Ks", "Qs", "Js", "Ts"]
WAGER = 10_000  # a $100 jackpot wager: a commit moves the pools by dollars, which a screenshot shows


@pytest_asyncio.fixture
async def sign(private: Private, signs: SignStarter) -> AsyncIterator[Callable[[str], Awaitable[str]]]:
    """Starts `jackpot-signage` in-process for a link of the private jackpotd; returns the page's URL."""

    async def start(link: str) -> str:
        return f"{await signs(private.target, link)}/links/{link}"

    yield start


async def screenshot(page: Page, name: str) -> None:
    await save(page, f"signage/{name}")


RECORD = """() => {
  window.__seen = {pools: [], celebrations: []};
  const observer = new MutationObserver((mutations) => {
    for (const m of mutations) {
      const e = m.target;
      if (m.attributeName === 'data-cents' && e.dataset.pool)
        window.__seen.pools.push([e.dataset.pool, Number(e.dataset.cents)]);
      if (e.id === 'celebration' && m.attributeName === 'hidden' && !e.hidden)
        window.__seen.celebrations.push({hit: e.dataset.hitId, amount: Number(e.dataset.amountCents),
                                         text: e.innerText});
    }
  });
  observer.observe(document.body, {attributes: true, subtree: true, attributeFilter: ['data-cents', 'hidden']});
}"""


async def seen(page: Page) -> dict[str, Any]:
    result: dict[str, Any] = await page.evaluate("() => window.__seen")
    return result


async def new_link(c: Client, fund: int = 0) -> tuple[str, str]:
    link, table = unique("sign"), unique("t")
    await c.create_link(link, resets={"MAJOR": 1_000_000, "MINOR": 100_000}, wager=WAGER)
    await c.register(table, link)
    if fund:
        await c.fund(link, "MAJOR", fund)
    return link, table


async def test_the_sign_shows_the_pools_getpools_returns_and_rises_to_a_commit(private: Private, sign: Any,
                                                                             browser: Any) -> None:
    c = private.client
    link, table = await new_link(c, fund=1_234_567)
    await c.fund(link, "MINOR", 50_001)
    page = await browser(HD)
    await page.goto(await sign(link))
    before = await c.pools(link)
    for pool in ("MAJOR", "MINOR"):
        await showing(page, pool, before[pool].amount_cents, 10, "the pools GetPools returns")
    assert before["MAJOR"].amount_cents == 1_234_567
    assert await page.locator("[data-pool=RESERVE]").count() == 0  # signs never see the reserve
    assert await page.inner_text("[data-pool=MAJOR] .amount") == "$12,345.67"
    assert not await visible(page, "#offline") and not await visible(page, "#celebration")
    await page.evaluate(RECORD)
    await c.commit(table, "r1", [1, 2, 3, 4, 5, 6, 7], amount=WAGER)  # $700 of jackpot wagers
    after = await c.pools(link)
    assert after["MAJOR"].amount_cents == before["MAJOR"].amount_cents + 14_000
    await showing(page, "MAJOR", after["MAJOR"].amount_cents, 10, "the amount after a commit")
    await showing(page, "MINOR", after["MINOR"].amount_cents, 10, "the amount after a commit")
    majors = [cents for pool, cents in (await seen(page))["pools"] if pool == "MAJOR"]
    # it paced up: every figure on the way between the old amount and the new one, never above it, in order
    assert majors == sorted(majors) and majors[-1] == after["MAJOR"].amount_cents, majors
    assert all(before["MAJOR"].amount_cents <= m <= after["MAJOR"].amount_cents for m in majors), majors
    await screenshot(page, "test_the_sign_shows_the_pools_getpools_returns_and_rises_to_a_commit")


async def test_a_royal_flush_is_celebrated_then_the_reset_value_shown(private: Private, sign: Any,
                                                                     browser: Any) -> None:
    c = private.client
    link, table = await new_link(c, fund=2_000_000)
    page = await browser(HD)
    await page.goto(await sign(link))
    await showing(page, "MAJOR", 2_000_000, 10, "the funded MAJOR")
    await c.commit(table, "r1", [3], amount=WAGER)
    paid = await c.settle(table, "r1", {3: ROYAL})
    prize = paid.payouts[0].amount_cents
    reset = (await c.pools(link))["MAJOR"].amount_cents
    assert prize > 2_000_000 > 1_000_000 <= reset < 1_100_000

    async def celebrating() -> bool:
        return await visible(page, "#celebration")

    await eventually(celebrating, 10, "the celebration")
    text = " ".join((await page.inner_text("#celebration")).split())
    dollars = f"${prize // 100:,}.{prize % 100:02d}"
    assert "ROYAL FLUSH" in text and table in text and "SEAT 3" in text and dollars in text, text
    assert "PENDING" not in text, text
    assert await page.get_attribute("#celebration", "data-hit-id") == paid.payouts[0].hit_id
    await screenshot(page, "test_a_royal_flush_is_celebrated_then_the_reset_value_shown-celebration")
    await eventually(lambda: page.is_hidden("#celebration"), CELEBRATE + 5, "the celebration's end")
    await showing(page, "MAJOR", reset, 5, "the reset value after the celebration")
    await screenshot(page, "test_a_royal_flush_is_celebrated_then_the_reset_value_shown")


async def test_the_sign_says_offline_while_jackpotd_is_down_and_recovers(private: Private, sign: Any,
                                                                        browser: Any) -> None:
    c = private.client
    link, table = await new_link(c, fund=300_000)
    page = await browser(HD)
    await page.goto(await sign(link))
    await showing(page, "MAJOR", 300_000, 10, "the funded MAJOR")
    assert not await visible(page, "#offline")
    private.stop.set()
    await private.task

    async def offline() -> bool:
        return await visible(page, "#offline")

    await eventually(offline, 15, "LINK OFFLINE once jackpotd stopped")
    text = await page.inner_text("#offline")
    assert "LINK OFFLINE" in text and "Reconnecting…" in text and "failed to connect" not in text, text
    assert await shown(page, "MAJOR") is None  # no stale amount while offline
    await screenshot(page, "test_the_sign_says_offline_while_jackpotd_is_down_and_recovers-offline")
    private.task, private.stop = await start_private(private.settings)
    await eventually(lambda: page.is_hidden("#offline"), 30, "the sign back online after the restart")
    await c.commit(table, "r1", [1], amount=WAGER)
    await showing(page, "MAJOR", (await c.pools(link))["MAJOR"].amount_cents, 10, "a commit after the restart")
    await screenshot(page, "test_the_sign_says_offline_while_jackpotd_is_down_and_recovers")


async def test_a_royal_flush_the_ledger_does_not_hold_is_never_shown(private: Private, isolated: Isolated,
                                                                     sign: Any, browser: Any) -> None:
    c = private.client
    link, table = await new_link(c, fund=2_000_000)
    other = unique("t")
    await c.register(other, link)  # its presence keeps the streams talking while the ledger is frozen
    pulse = await Pulse(c, link, other).start()
    page = await browser(HD)
    await page.goto(await sign(link))
    await showing(page, "MAJOR", (await c.pools(link))["MAJOR"].amount_cents, 10, "the funded MAJOR")
    await c.commit(table, "r1", [1], amount=WAGER)  # an entry the feed reads: from then on it offers presence too
    await pulse.beating(10)
    held = (await c.pools(link))["MAJOR"].amount_cents
    await showing(page, "MAJOR", held, 10, "the ledger's MAJOR")
    await page.evaluate(RECORD)
    frozen = await asyncpg.connect(isolated.dsn)  # the ledger frozen for this database: nothing commits
    settle = None
    try:
        lock = frozen.transaction()
        await lock.start()
        await frozen.execute("LOCK TABLE entries IN EXCLUSIVE MODE")  # reads go on; no entry is appended
        applied = int(await c.redis.get(keys.seq(link)))
        settle = asyncio.ensure_future(c.settle(table, "r1", {1: ROYAL}))

        async def redis_applied() -> bool:
            return int(await c.redis.get(keys.seq(link))) > applied

        await eventually(redis_applied, 10, "Redis applying the royal flush")
        # The marker: a table that was never online comes online now. The sign shows it only after jackpotd's
        # feed has looked at the link since Redis applied the royal flush, and after anything of it sent before.
        await set_online(c, table, True)
        await eventually(lambda: page.is_visible(f'li[data-table="{table}"][data-online="true"]'), 10,
                         "the sign showing the table online (the feed has run since the royal flush)")
        assert not await visible(page, "#celebration")
        assert await shown(page, "MAJOR") == held
        record = await seen(page)
        assert record["celebrations"] == [] and all(cents == held for _, cents in record["pools"]), record
        await screenshot(page, "test_a_royal_flush_the_ledger_does_not_hold_is_never_shown-frozen")
        await pulse.stop()
        await lock.rollback()
        paid = await asyncio.wait_for(settle, 30)
        settle = None
        await eventually(lambda: page.is_visible("#celebration"), 15, "the celebration once the ledger holds it")
        assert await page.get_attribute("#celebration", "data-hit-id") == paid.payouts[0].hit_id
        reset = (await c.pools(link))["MAJOR"].amount_cents
        await eventually(lambda: page.is_hidden("#celebration"), CELEBRATE + 5, "the celebration's end")
        await showing(page, "MAJOR", reset, 5, "the reset value")
        record = await seen(page)
        assert [x["hit"] for x in record["celebrations"]] == [paid.payouts[0].hit_id], record
        await screenshot(page, "test_a_royal_flush_the_ledger_does_not_hold_is_never_shown")
    finally:
        await pulse.stop()
        if settle is not None:
            settle.cancel()
        await frozen.close()


async def test_the_sign_reads_from_across_a_room_at_1080p_and_4k(private: Private, sign: Any, browser: Any) -> None:
    c = private.client
    link, _ = await new_link(c, fund=98_765_432)
    url = await sign(link)
    heights = {}
    for name, viewport in (("1080p", HD), ("4k", UHD)):
        page = await browser(viewport)
        await page.goto(url)
        await showing(page, "MAJOR", 98_765_432, 10, f"MAJOR at {name}")
        box = await page.locator("[data-pool=MAJOR] .amount").bounding_box()
        assert box is not None
        heights[name] = box["height"] / viewport["height"]
        # the main amount is at least a sixth of the screen's height, and all of it fits on the screen
        assert heights[name] > 1 / 6 and box["x"] >= 0 and box["x"] + box["width"] <= viewport["width"], (name, box)
        minor = await page.locator("[data-pool=MINOR] .amount").bounding_box()
        assert minor is not None and minor["height"] / viewport["height"] > 1 / 12, (name, minor)
        await screenshot(page, f"test_the_sign_reads_from_across_a_room-{name}")
    assert abs(heights["1080p"] - heights["4k"]) < 0.02, heights  # the same proportions, only sharper


async def test_a_hit_awaiting_verification_says_so_then_its_decision(private: Private, sign: Any,
                                                                    browser: Any) -> None:
    c = private.client
    link, table = unique("sign"), unique("t")
    await c.create_link(link, resets={"MAJOR": 1_000_000, "MINOR": 100_000}, wager=WAGER, threshold=500_000)
    await c.register(table, link)
    await c.fund(link, "MAJOR", 2_000_000)
    page = await browser(HD)
    await page.goto(await sign(link))
    await showing(page, "MAJOR", 2_000_000, 10, "the funded MAJOR")
    await c.commit(table, "r1", [5], amount=WAGER)
    paid = await c.settle(table, "r1", {5: ROYAL})
    hit_id = paid.payouts[0].hit_id

    async def status_shown(status: str) -> bool:
        return bool(await page.is_visible("#celebration")
                    and await page.get_attribute("#celebration", "data-status") == status)

    await eventually(lambda: status_shown("PENDING"), 10, "the held hit")
    assert "PENDING VERIFICATION" in await page.inner_text("#celebration")
    await showing(page, "MAJOR", (await c.pools(link))["MAJOR"].amount_cents, 5, "the reset under the celebration")
    await screenshot(page, "test_a_hit_awaiting_verification_says_so_then_its_decision-pending")
    await c.admin.ApproveHit(admin_pb2.ApproveHitRequest(request_id=rid(), hit_id=hit_id, audit=AUDIT))
    await eventually(lambda: status_shown("PAID"), CELEBRATE + 10, "the approval")
    assert "VERIFIED AND PAID" in await page.inner_text("#celebration")
    assert await page.get_attribute("#celebration", "data-hit-id") == hit_id
    await screenshot(page, "test_a_hit_awaiting_verification_says_so_then_its_decision")
