"""The web server: a kiosk page per link, and its Server-Sent Events.

  GET /                       redirects to the first configured link's page
  GET /links/<link>           the kiosk page (static HTML, CSS and JS beside this module: no build step)
  GET /links/<link>/events    text/event-stream: `state` (pools, tables, online, sequence), `hit`, `offline`
  GET /static/...             the page's CSS and JS
  GET /healthz                200 with each link's online flag
"""

from __future__ import annotations

import json
import logging
import re
from importlib import resources
from typing import Any

from aiohttp import web

from .feed import ChannelFactory, Feeds

log = logging.getLogger("jackpot_signage.app")

LINK_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")  # the service's id grammar (README, Ids and free text)
KEEPALIVE = 2.0  # seconds: every browser hears from us at least this often (the page calls 6 s of silence offline)
STATIC = resources.files("jackpot_signage") / "static"

FEEDS: web.AppKey[Feeds] = web.AppKey("feeds", Feeds)
SETTINGS: web.AppKey[dict[str, Any]] = web.AppKey("settings", dict)


def _static(name: str) -> bytes:
    return (STATIC / name).read_bytes()


def make_app(target: str, channel: ChannelFactory, links: list[str], *, celebrate_seconds: float = 8.0,
             max_links: int = 64) -> web.Application:
    """The signage app: feeds for `links` open as it starts; other valid link ids are opened when asked for."""
    app = web.Application()
    app[FEEDS] = Feeds(target, channel, links, max_links=max_links)
    app[SETTINGS] = {"celebrate_seconds": celebrate_seconds, "default_link": links[0] if links else None}
    app.router.add_get("/", index)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/links/{link}", page)
    app.router.add_get("/links/{link}/events", events)
    app.router.add_get("/static/{name}", static)
    app.on_startup.append(_start)
    app.on_shutdown.append(_stop)
    return app


async def _start(app: web.Application) -> None:
    app[FEEDS].start()


async def _stop(app: web.Application) -> None:
    await app[FEEDS].stop()


async def index(request: web.Request) -> web.StreamResponse:
    link = request.app[SETTINGS]["default_link"]
    if not link:
        return web.Response(text="jackpot-signage: open /links/<link>\n", content_type="text/plain")
    raise web.HTTPFound(f"/links/{link}")


async def healthz(request: web.Request) -> web.Response:
    feeds = request.app[FEEDS].feeds
    return web.json_response({link: {"online": f.online, "reason": f.reason, "browsers": len(f.subscribers)}
                              for link, f in feeds.items()})


def _link(request: web.Request) -> str:
    link = request.match_info["link"]
    if not LINK_ID.match(link):
        raise web.HTTPNotFound(text="not a link id: 1-64 characters of A-Z a-z 0-9 . _ -\n")
    return link


async def page(request: web.Request) -> web.Response:
    link = _link(request)
    html = _static("index.html").decode()
    config = json.dumps({"link": link, "celebrateSeconds": request.app[SETTINGS]["celebrate_seconds"]})
    html = html.replace("{{LINK}}", link).replace("{{CONFIG}}", config.replace("<", "\\u003c"))
    return web.Response(text=html, content_type="text/html", headers={"Cache-Control": "no-store"})


TYPES = {".css": "text/css", ".js": "text/javascript", ".svg": "image/svg+xml"}


async def static(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    suffix = name[name.rfind("."):] if "." in name else ""
    if "/" in name or name.startswith(".") or suffix not in TYPES or not (STATIC / name).is_file():
        raise web.HTTPNotFound()
    return web.Response(body=_static(name), content_type=TYPES[suffix], headers={"Cache-Control": "no-cache"})


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


async def events(request: web.Request) -> web.StreamResponse:
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
                await response.write(_event("offline", {"link": link, "reason": data["reason"]}))
            await response.write(_event(name, data))
    except ConnectionResetError:
        pass
    finally:
        feed.unsubscribe(sub)
        log.info("browser %s left link %s (%d now)", request.remote, link, len(feed.subscribers))
    return response
