"""The floor sign's browser tests' tools: `jackpot-signage` served in-process (`start_sign`), Debian's Chromium
through Playwright (the `browser` fixture), and readings of the page (what it shows, its timeline)."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc
import pytest_asyncio
from aiohttp import web
from jackpot_signage.app import make_app
from jackpot_signage.cli import sign_channel

from jackpotd.auth.credentials import RoleCredential
from jackpotd.auth.identity import Role
from jackpotd.embedded import free_port

from .browser import ARGS, CHROMIUM, require_chromium
from .harness import eventually, token

require_chromium()

from playwright.async_api import BrowserContext, Page, async_playwright  # noqa: E402

ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"
CELEBRATE = 3.0  # seconds: the tests' --celebrate-seconds
HD, UHD = {"width": 1920, "height": 1080}, {"width": 3840, "height": 2160}

SignStarter = Callable[..., Awaitable[str]]


@pytest_asyncio.fixture
async def signs() -> AsyncIterator[SignStarter]:
    """`start(target, link, celebrate=CELEBRATE)`: `jackpot-signage` in-process for a link of the jackpotd at
    `target` (a display token, as any sign); returns the sign server's base URL."""
    runners: list[web.AppRunner] = []

    async def start(target: str, link: str, celebrate: float = CELEBRATE) -> str:
        url, runner = await serve_sign(target, link, celebrate)
        runners.append(runner)
        return url

    yield start
    for runner in runners:
        await runner.cleanup()


async def serve_sign(target: str, link: str, celebrate: float = CELEBRATE, tries: list[str] | None = None
                     ) -> tuple[str, web.AppRunner]:
    """`jackpot-signage` in-process for a link; its base URL, and its runner (cleanup() stops it). Each stream it
    opens to jackpotd is noted in `tries`."""
    credential = RoleCredential(token=token(Role.DISPLAY, "sign"))

    def channel(t: str) -> grpc.aio.Channel:
        if tries is not None:
            tries.append(t)
        return sign_channel(credential, t)

    app = make_app(target, channel, [link], celebrate_seconds=celebrate)
    runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=1)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return f"http://127.0.0.1:{port}", runner


@pytest_asyncio.fixture
async def browser() -> AsyncIterator[Callable[[dict[str, int]], Awaitable[Page]]]:
    """Debian's Chromium through Playwright (never a browser Playwright downloads), a fresh profile each; the
    test fails if a page raised, or if the browser's console said an error (a 404 of a favicon, say)."""
    profiles: list[str] = []
    contexts: list[BrowserContext] = []
    errors: list[str] = []
    async with async_playwright() as pw:

        async def open_page(viewport: dict[str, int]) -> Page:
            profile = tempfile.mkdtemp(prefix="signage-chromium-")
            profiles.append(profile)
            context = await pw.chromium.launch_persistent_context(
                profile, executable_path=CHROMIUM, args=ARGS, headless=True, viewport=viewport)  # type: ignore[arg-type]
            contexts.append(context)
            page = context.pages[0] if context.pages else await context.new_page()
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("console", lambda m: errors.append(f"console: {m.text} ({m.location.get('url')})")
                    if m.type == "error" and unexpected(m.location.get("url", "")) else None)
            return page

        yield open_page
        for context in contexts:
            with contextlib.suppress(Exception):
                await context.close()
    for profile in profiles:
        shutil.rmtree(profile, ignore_errors=True)
    assert not errors, f"the page raised or the console said an error: {errors}"


def unexpected(url: str) -> bool:
    """A console error about the page's own files (its script, style, icon: a favicon 404, say) fails the test;
    others (a 404 page a test asked for, the events of a sign server a test stopped) are what it meant."""
    return "/static/" in url or url.endswith("/favicon.ico")


async def screenshot(page: Page, name: str) -> None:
    """A screenshot in artifacts/ (git-ignored); `name` may hold a folder."""
    path = ARTIFACTS / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(path))


async def shown(page: Page, pool: str) -> int | None:
    """The cents the sign displays for a pool (None while it shows none)."""
    value = await page.evaluate(
        "(pool) => { const e = document.querySelector(`[data-pool=\"${pool}\"]`); "
        "return e && e.dataset.cents !== undefined && !document.body.classList.contains('offline') "
        "? Number(e.dataset.cents) : null; }", pool)
    return None if value is None else int(value)


async def visible(page: Page, selector: str) -> bool:
    """Whether an element of the page is visible now."""
    return bool(await page.is_visible(selector))


async def showing(page: Page, pool: str, cents: int, timeout: float, what: str) -> None:
    """Wait for the sign to display `cents` for `pool`."""
    async def check() -> bool:
        return await shown(page, pool) == cents

    await eventually(check, timeout, f"{what}: the sign showing {pool} = {cents} (shows {await shown(page, pool)})")


async def sign_log(page: Page) -> list[dict[str, Any]]:
    """The page's timeline (window.__signLog): what it showed when, in browser milliseconds since the epoch."""
    result: list[dict[str, Any]] = await page.evaluate("() => window.__signLog")
    return result
