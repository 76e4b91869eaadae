"""The web server: a kiosk page per link, and its Server-Sent Events.

  GET /                       redirects to the first configured link's page
  GET /links/<link>           the kiosk page (static HTML, CSS and JS beside this module: no build step);
                              404 with a small page when jackpotd says the link does not exist
  GET /links/<link>/events    text/event-stream: `state` (pools, tables, online, sequence, reason, code), `hit`,
                              `offline` (reason: a short human text, code: a small one; the detail is logged)
  GET /static/...             the page's CSS, JS and icon; /favicon.ico the icon
  GET /healthz                200 with each link's online flag, reason and code
Any other path: 404 with the same small page.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Any

from aiohttp import web

from .feed import ChannelFactory, Feeds

log = logging.getLogger("jackpot_signage.app")

LINK_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")  # the service's id grammar (docs/SERVICE.md, Ids and free text)
KEEPALIVE = 2.0  # seconds: every browser hears from us at least this often (the page calls 6 s of silence offline)
FIRST_WORD = 3.0  # seconds a page request waits for jackpotd's first answer about a link (does it exist?)
CELEBRATE_MAX = 8.0  # seconds: a top-level hit fills the screen at most this long (the pools must not hide)
STATIC = resources.files("jackpot_signage") / "static"

FEEDS: web.AppKey[Feeds] = web.AppKey("feeds", Feeds)
SETTINGS: web.AppKey[dict[str, Any]] = web.AppKey("settings", dict)


def _static(name: str) -> bytes:
    """A file of the page, beside this module."""
    return (STATIC / name).read_bytes()


def make_app(target: str, channel: ChannelFactory, links: list[str], *, celebrate_seconds: float = 8.0,
             max_links: int = 64) -> web.Application:
    """The signage app: feeds for `links` open as it starts; other valid link ids are opened when asked for."""
    app = web.Application(middlewares=[human_404])
    app[FEEDS] = Feeds(target, channel, links, max_links=max_links)
    app[SETTINGS] = {"celebrate_seconds": max(0.0, min(celebrate_seconds, CELEBRATE_MAX)),
                     "default_link": links[0] if links else None}
    app.router.add_get("/", index)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/favicon.ico", favicon)
    app.router.add_get("/links/{link}", page)
    app.router.add_get("/links/{link}/events", events)
    app.router.add_get("/static/{name}", static)
    app.on_startup.append(_start)
    app.on_shutdown.append(_stop)
    return app


async def _start(app: web.Application) -> None:
    """Open the configured links' feeds."""
    app[FEEDS].start()


async def _stop(app: web.Application) -> None:
    """Close every feed."""
    await app[FEEDS].stop()


def not_found(what: str) -> web.Response:
    """The small human page of a 404 (an unknown link or path): the sign's look, nothing technical."""
    html = _static("notfound.html").decode().replace("{{WHAT}}", _escape(what))
    return web.Response(status=404, text=html, content_type="text/html", headers={"Cache-Control": "no-store"})


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def human_404(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every 404 (a path no route knows, a bad link id, a static file that is not there) as the small page."""
    try:
        return await handler(request)
    except web.HTTPNotFound:
        return not_found("There is no sign at this address.")


async def favicon(request: web.Request) -> web.Response:
    """The sign's icon, so a kiosk browser's console shows no 404."""
    return web.Response(body=_static("favicon.svg"), content_type="image/svg+xml",
                        headers={"Cache-Control": "max-age=86400"})


async def index(request: web.Request) -> web.StreamResponse:
    """Redirect to the first configured link's page."""
    link = request.app[SETTINGS]["default_link"]
    if not link:
        return web.Response(text="jackpot-signage: open /links/<link>\n", content_type="text/plain")
    raise web.HTTPFound(f"/links/{link}")


async def healthz(request: web.Request) -> web.Response:
    """Each watched link: online, and if not why (the page's text and code), and how many browsers watch it."""
    feeds = request.app[FEEDS].feeds
    return web.json_response({link: {"online": f.online, "reason": f.reason, "code": f.state()["code"],
                                     "browsers": len(f.subscribers)} for link, f in feeds.items()})


def _link(request: web.Request) -> str:
    link = request.match_info["link"]
    if not LINK_ID.match(link):
        raise web.HTTPNotFound(text="not a link id: 1-64 characters of A-Z a-z 0-9 . _ -\n")
    return link


async def page(request: web.Request) -> web.Response:
    """The kiosk page of a link; 404 when jackpotd says there is no such link (a page whose jackpotd is down, or
    slow to answer within FIRST_WORD seconds, is served: it says LINK OFFLINE until jackpotd answers)."""
    link = _link(request)
    feeds = request.app[FEEDS]
    feed = feeds.get(link)
    if feed is not None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(feed.known.wait(), FIRST_WORD)
        if feed.missing:
            await feeds.forget(link)
            return not_found(f"There is no link {link} on this jackpot system.")
    html = _static("index.html").decode()
    config = json.dumps({"link": link, "celebrateSeconds": request.app[SETTINGS]["celebrate_seconds"]})
    html = html.replace("{{LINK}}", link).replace("{{CONFIG}}", config.replace("<", "\\u003c"))
    return web.Response(text=html, content_type="text/html", headers={"Cache-Control": "no-store"})


TYPES = {".css": "text/css", ".js": "text/javascript", ".svg": "image/svg+xml"}


async def static(request: web.Request) -> web.Response:
    """The page's CSS, JS and icon, beside this module."""
    name = request.match_info["name"]
    suffix = name[name.rfind("."):] if "." in name else ""
    if "/" in name or name.startswith(".") or suffix not in TYPES or not (STATIC / name).is_file():
        raise web.HTTPNotFound()
    return web.Response(body=_static(name), content_type=TYPES[suffix], headers={"Cache-Control": "no-cache"})


def _event(name: str, data: dict[str, Any]) -> bytes:
    """One Server-Sent Event."""
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


async def events(request: web.Request) -> web.StreamResponse:
    """A browser's Server-Sent Events: the link's state at once and whenever it changes (at least every KEEPALIVE
    seconds), and every hit in order."""
    link = _link(request)
    feed = request.app[FEEDS].get(link)
    if feed is None:
        raise web.HTTPServiceUnavailable(text="this sign server watches too many links already\n")
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store",
                                           "X-Accel-Buffering": "no"})
    await response.prepare(request)
    sub = feed.subscribe()
    log.info("browser %s watching link %s (%d now)", request.remote, link, len(feed.subscribers))
    try:
        await response.write(b"retry: 1000\n\n")  # EventSource reconnects a second after losing us
        while not sub.gone:
            item = await sub.next(KEEPALIVE)
            if item is None:  # quiet: say again where things stand
                item = ("state", feed.state())
            name, data = item
            if name == "state" and not data["online"]:
                await response.write(_event("offline", {"link": link, "reason": data["reason"],
                                                        "code": data["code"]}))
            await response.write(_event(name, data))
    except ConnectionResetError:
        pass
    finally:
        feed.unsubscribe(sub)
        log.info("browser %s left link %s (%d now)", request.remote, link, len(feed.subscribers))
    return response
