"""The console's one follower of the link's hits: a WatchPools stream on the console's own credential, kept open
for as long as the console runs, bumping `Console.hits_generation` on each (re)connection and each hit announced,
so the pending page reads jackpotd again only when something changed (live.py)."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from aiohttp import web
from jackpot_floor.calls import FloorError

from jackpotd.backoff import Backoff, exponential

from .state import CONSOLE, Console

log = logging.getLogger("jackpot_console.watch")

WAITS = exponential(0.5, 5.0, jitter=0.2)  # 0.5, 1, 2, 4, 5 s between tries, each ± 20%; reset once data flows
WATCHER: web.AppKey[asyncio.Task[None]] = web.AppKey("watcher", asyncio.Task)


async def follow(console: Console) -> None:
    """Follow the link's hits for good, reconnecting with backoff (also while the console has no credential)."""
    backoff = Backoff(WAITS)
    reason = ""
    while True:
        now = "the stream ended"
        try:
            async for _ in console.calls().watch_hits(console.settings.link):
                if not console.watching:
                    log.info("following the hits of link %s", console.settings.link)
                    reason = ""
                console.watching = True
                console.hits_generation += 1  # a connection (events may have been missed) or a hit announced
                backoff.reset()
        except FloorError as e:
            now = f"{e.code}: {e.message}"
            if e.code == "UNAUTHENTICATED":
                await console.forget_channel()
        except ValueError as e:  # CredentialsMissing among them: retry later
            now = f"no credential for jackpotd yet: {e}"
        except Exception as e:  # anything else: keep trying, but say what it was
            now = f"{type(e).__name__}: {e}"
            if now != reason:
                log.exception("following the hits of link %s failed", console.settings.link)
        console.watching = False
        if now != reason:  # each new reason once, not every retry
            log.info("not following the hits of link %s (%s); the pending page reads jackpotd at each refresh "
                     "meanwhile", console.settings.link, now)
            reason = now
        await backoff.sleep()


async def start(app: web.Application) -> None:
    """Start following as the app starts."""
    app[WATCHER] = asyncio.create_task(follow(app[CONSOLE]), name="console watch")


async def stop(app: web.Application) -> None:
    """Stop following as the app stops."""
    task = app[WATCHER]
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    app[CONSOLE].watching = False
