"""Floor signs in busy play and on bad days (issue 21), in Debian's headless Chromium: under a burst of 10 hits in
10 s the pools stay visible at least half the time, every MAJOR hit is celebrated and the sign is never more
than 10 s behind; an unknown link or path is a 404 page, the icon is served; the offline page says a short human
reason and a small code, steadily, and the detail goes to the sign server's log once."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import aiohttp
import pytest
from jackpot_signage.app import FEEDS

from jackpotd.api.gen.jackpot.v1 import common_pb2, display_pb2
from jackpotd.embedded import free_port

from ..conftest import unique
from .harness import Client, eventually
from .signs import HD, browser, screenshot, serve_sign, sign_log, signs, visible

__all__ = ["browser", "signs"]  # fixtures

ROYAL = ["As", "Ks", "Qs", "Js", "Ts"]
STRAIGHT_FLUSH = ["9h", "8h", "7h", "6h", "5h"]
FLUSH = ["2c", "5c", "9c", "Jc", "Kc"]
FULL_HOUSE = ["Qh", "Qd", "Qs", "3c", "3h"]
FOUR = ["9c", "9d", "9h", "9s", "2c"]
# 5 MAJOR and 5 MINOR hits, one a second
BURST = [ROYAL, FLUSH, STRAIGHT_FLUSH, FULL_HOUSE, ROYAL, FOUR, STRAIGHT_FLUSH, FLUSH, ROYAL, FULL_HOUSE]

COVERED = """() => {
  const over = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  const banners = [...document.querySelectorAll('#banners li')].map((e) => e.getBoundingClientRect());
  return [...document.querySelectorAll('.pool .amount')].filter((e) => banners.some((b) =>
    over(b, e.getBoundingClientRect()))).map((e) => e.parentElement.dataset.pool);
}"""


def cards_on(log: list[dict[str, Any]]) -> list[tuple[float, float, list[str]]]:
    """The full-screen cards the page showed: (from, to, hit ids), in browser milliseconds."""
    cards, start, ids = [], None, []
    for e in log:
        if e["what"] == "full" and e["on"]:
            start, ids = e["t"], [h["id"] for h in e["hits"]]
        elif e["what"] == "full" and not e["on"] and start is not None:
            cards.append((start, e["t"], ids))
            start = None
    assert start is None, "a card is still on"
    return cards


async def test_a_burst_of_ten_hits_never_hides_the_pools_for_long(client: Client, target: str, signs: Any,
                                                                  browser: Any) -> None:
    link, table = unique("burst"), unique("t")
    await client.create_link(link, resets={"MAJOR": 1_000_000, "MINOR": 100_000}, wager=10_000)
    await client.register(table, link)
    await client.fund(link, "MAJOR", 5_000_000)
    await client.fund(link, "MINOR", 2_000_000)
    page = await browser(HD)
    await page.goto(f"{await signs(target, link, celebrate=8.0)}/links/{link}")  # a lone hit: 8 s full screen
    await eventually(lambda: page.is_visible("[data-pool=MAJOR] .amount"), 10, "the pools")
    hits: list[tuple[str, str, float]] = []  # (hit id, pool, when the ledger had it: ms since the epoch)
    start = asyncio.get_running_loop().time()
    for i, hand in enumerate(BURST):
        # the burst's pace: one round a second, as busy tables deal them (a schedule, not a wait for something)
        await asyncio.sleep(max(0.0, start + i - asyncio.get_running_loop().time()))
        await client.commit(table, f"r{i}", [1], amount=10_000)
        paid = await client.settle(table, f"r{i}", {1: hand})
        hits += [(p.hit_id, p.pool, time.time() * 1000) for p in paid.payouts]
        if i == 6:  # pools and banners: no banner covers an amount
            await screenshot(page, "sign-burst")
            assert await page.evaluate(COVERED) == [], "a banner covers a pool's amount"
        if i == 7 and await visible(page, "#celebration"):
            await screenshot(page, "sign-burst-card")
    burst_end = time.time() * 1000
    majors = [h for h, pool, _ in hits if pool == "MAJOR"]
    minors = [h for h, pool, _ in hits if pool == "MINOR"]
    assert (len(majors), len(minors)) == (5, 5), hits
    final = await client.pools(link)

    async def caught_up() -> list[dict[str, Any]] | None:
        now: dict[str, Any] = await page.evaluate(  # at one instant: the timeline, the card, the sequence shown
            "() => ({log: [...window.__signLog], hidden: document.getElementById('celebration').hidden, "
            "sequence: Number(document.body.dataset.sequence || 0)})")
        log: list[dict[str, Any]] = now["log"]
        on_cards = {h["id"] for e in log if e["what"] == "full" and e["on"] for h in e["hits"]}
        done = set(majors) <= on_cards and now["hidden"] and now["sequence"] >= final["_seq"]
        return log if done else None

    log = await eventually(caught_up, 25, "every MAJOR hit celebrated, the last card over, the sign caught up")
    cards = cards_on(log)
    # every MAJOR hit on a full-screen card, every MINOR one on a banner, none on both
    on_cards = [h for _, _, ids in cards for h in ids]
    assert sorted(on_cards) == sorted(majors), (cards, majors)
    bannered = [h["id"] for e in log if e["what"] == "banner" for h in e["hits"]]
    assert sorted(bannered) == sorted(minors), (bannered, minors)
    # never more than 10 s behind the ledger: each hit on screen within 10 s of its commit
    first_shown = {}
    for e in log:
        if e["what"] == "banner" or (e["what"] == "full" and e["on"]):
            for h in e["hits"]:
                first_shown.setdefault(h["id"], e["t"])
    behind = {h: first_shown[h] - at for h, _, at in hits}
    assert max(behind.values()) <= 10_000, behind
    # the pools visible at least half the time, from the first hit to the end of the last card (and no card
    # longer than 8 s)
    arrived = min(e["t"] for e in log if e["what"] == "hit")
    until = max(burst_end, cards[-1][1])
    hidden = sum(min(end, until) - max(begin, arrived) for begin, end, _ in cards)
    timeline = [(begin - arrived, end - arrived, len(ids)) for begin, end, ids in cards]
    assert hidden <= (until - arrived) / 2, (hidden, until - arrived, timeline, behind)
    assert all(end - begin <= 8_500 for begin, end, _ in cards), cards
    assert await visible(page, "[data-pool=MAJOR] .amount")


async def test_an_unknown_link_or_path_is_a_404_page_and_the_icon_is_served(client: Client, target: str,
                                                                            signs: Any) -> None:
    link = unique("known")
    await client.create_link(link)
    base = await signs(target, link)
    async with aiohttp.ClientSession() as http:
        for path in (f"/links/{unique('none')}", "/nowhere", "/links/bad%20id", "/static/nothing.js"):
            async with http.get(base + path) as r:
                body = await r.text()
                assert (r.status, r.content_type) == (404, "text/html"), (path, r.status, body)
                assert "NOT FOUND" in body and "NOT_FOUND" not in body and "link_id" not in body, (path, body)
        async with http.get(f"{base}/links/{link}") as r:
            assert r.status == 200 and 'rel="icon"' in await r.text()
        for path in ("/favicon.ico", "/static/favicon.svg"):
            async with http.get(base + path) as r:
                assert (r.status, r.content_type) == (200, "image/svg+xml"), path
                assert (await r.read()).startswith(b"<svg"), path


async def test_the_offline_page_says_a_short_human_reason_steadily(browser: Any,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "jackpot_signage.feed")
    link, tries = unique("off"), list[str]()
    base, runner = await serve_sign(f"127.0.0.1:{free_port()}", link, tries=tries)  # nothing listens there
    stopped = False
    try:
        page = await browser(HD)
        await page.goto(f"{base}/links/{link}")

        async def offline_as(code: str) -> list[dict[str, Any]] | None:
            log = [e for e in await sign_log(page) if e["what"] == "offline"]
            return log if log and log[-1]["code"] == code and await page.is_visible("#offline") else None

        await eventually(lambda: offline_as("UNAVAILABLE"), 10, "jackpotd out of reach")
        # four tries later (0.5, 1, 2 s apart): the same text, never rewritten, and the detail logged once
        await eventually(lambda: len(tries) >= 4, 10, "four tries to reach jackpotd")
        said = [(e["code"], e["text"]) for e in await sign_log(page) if e["what"] == "offline"]
        assert said == [("CONNECTING", "Connecting…"), ("UNAVAILABLE", "Reconnecting…")], said
        text = await page.inner_text("#offline")
        assert "LINK OFFLINE" in text and "Reconnecting…" in text and "UNAVAILABLE" in text, text
        assert "failed to connect" not in text and "refused" not in text, text
        details = [r.getMessage() for r in caplog.records if "failed to connect" in r.getMessage()]
        assert len(details) == 1, details
        await screenshot(page, "signage/offline-reason")
        # the sign server itself stops: one text again, whether the browser notices by an error or by silence
        await runner.cleanup()
        stopped = True
        await eventually(lambda: offline_as("SIGN_SERVER"), 10, "the sign server out of reach")
        silent_since = (await sign_log(page))[-1]["t"]
        await eventually(lambda: page.evaluate(f"() => Date.now() - {silent_since} > 7500"), 12,
                         "the page's silence check run too")
        said = [(e["code"], e["text"]) for e in await sign_log(page) if e["what"] == "offline"]
        assert said[-1] == ("SIGN_SERVER", "Reconnecting…") and said.count(said[-1]) == 1, said
    finally:
        if not stopped:
            await runner.cleanup()


async def test_a_hit_two_supervisors_must_approve_says_how_many_have(client: Client, target: str,
                                                                      browser: Any) -> None:
    # The announcements are put into the sign's feed as jackpotd sends them (approvals and approvals_needed,
    # common.proto HitAnnouncement 10-11), on a live link: what the page makes of them is under test here; that
    # jackpotd sends them is tested with dual control itself.
    link = unique("dual")
    await client.create_link(link)
    base, runner = await serve_sign(target, link, celebrate=8.0)  # the card stays while its word changes
    try:
        page = await browser(HD)
        await page.goto(f"{base}/links/{link}")
        await eventually(lambda: page.is_visible("[data-pool=MAJOR] .amount"), 10, "the pools")
        feed = runner.app[FEEDS].feeds[link]

        def announce(pool: str, hit_id: str, status: str, approvals: int) -> None:
            hit = common_pb2.HitAnnouncement(table_id="t1", seat=2, hand="royal_flush", amount_cents=2_000_000,
                                             pool=pool, hit_id=hit_id, sequence=feed.sequence, status=status,
                                             approvals=approvals, approvals_needed=2)
            feed._apply(display_pb2.PoolsUpdate(link_id=link, sequence=feed.sequence, hit=hit,
                                                pools=[common_pb2.PoolAmount(pool=p["pool"],
                                                                             amount_cents=p["amount_cents"],
                                                                             reset_cents=p["reset_cents"])
                                                       for p in feed.pools]))

        async def card_says(status: str) -> str | None:
            text = await page.inner_text("#celebration") if await visible(page, "#celebration") else ""
            return text if await page.get_attribute("#celebration", "data-status") == status else None

        announce("MAJOR", "h1", "PENDING", 0)
        text = " ".join((await eventually(lambda: card_says("PENDING"), 5, "the held hit")).split())
        assert "PENDING VERIFICATION" in text and "0 of 2 approvals" in text, text
        announce("MAJOR", "h1", "PENDING", 1)
        await eventually(lambda: page.get_by_text("1 of 2 approvals").is_visible(), 5, "the first approval")
        await screenshot(page, "signage/dual-approval")
        announce("MAJOR", "h1", "PAID", 2)
        text = " ".join((await eventually(lambda: card_says("PAID"), 5, "the decision")).split())
        assert "VERIFIED AND PAID" in text and "approvals" not in text, text
        announce("MINOR", "h2", "PENDING", 1)  # a MINOR hit: a banner says the same
        banner = page.locator('#banners li[data-hit-id="h2"]')
        await eventually(banner.is_visible, 5, "the MINOR hit's banner")
        assert "PENDING VERIFICATION · 1 of 2 approvals" in await banner.inner_text()
    finally:
        await runner.cleanup()


async def test_a_decision_in_its_cards_last_moment_stays_to_be_read(client: Client, target: str,
                                                                     browser: Any) -> None:
    # The CI flake of test_console_browser (issue 23): a supervisor's approval that reached the sign 0.1 s before
    # its PENDING card ended was said in place and gone before anyone (or the test) could read VERIFIED AND PAID.
    # Here the decision is put into the sign's feed 0.6 s before the card's end (the page's own clock and plan,
    # read from its timeline): it must stay on screen at least DECIDED_MS (3 s at --celebrate-seconds 3).
    link = unique("decided")
    await client.create_link(link)
    base, runner = await serve_sign(target, link, celebrate=3.0)
    try:
        page = await browser(HD)
        await page.goto(f"{base}/links/{link}")
        await eventually(lambda: page.is_visible("[data-pool=MAJOR] .amount"), 10, "the pools")
        feed = runner.app[FEEDS].feeds[link]

        def announce(status: str) -> None:
            hit = common_pb2.HitAnnouncement(table_id="t1", seat=2, hand="royal_flush", amount_cents=2_000_000,
                                             pool="MAJOR", hit_id="h1", sequence=feed.sequence, status=status,
                                             approvals=int(status == "PAID"), approvals_needed=1)
            feed._apply(display_pb2.PoolsUpdate(link_id=link, sequence=feed.sequence, hit=hit))

        announce("PENDING")

        async def card_until() -> float | None:
            return next((e["until"] for e in await sign_log(page) if e["what"] == "full" and e["on"]), None)

        until = await eventually(card_until, 5, "the PENDING card")
        await eventually(lambda: page.evaluate(f"Date.now() >= {until} - 600"), 5, "the card's last 0.6 s")
        announce("PAID")

        async def card_off() -> list[dict[str, Any]] | None:
            log = await sign_log(page)
            return log if any(e["what"] == "full" and not e["on"] for e in log) else None

        log = await eventually(card_off, 10, "the card over")
        said = next(e for e in log if e["what"] == "update" and e["hits"][0]["status"] == "PAID")
        off = next(e for e in log if e["what"] == "full" and not e["on"])
        assert said["t"] <= until, (said, until)  # said on the PENDING card, not on a card of its own
        assert off["t"] - said["t"] >= 2_900, (said, off, until)  # read for 3 s, not flashed for 0.6
    finally:
        await runner.cleanup()
