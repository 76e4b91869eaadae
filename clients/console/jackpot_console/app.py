"""The console's web server: log in, then the floor's pages, each act done for the person logged in.

  GET  /login, POST /login, POST /logout      a person logs in as themselves (login.py)
  GET  /pending | /tables | /audit | /pools   the pages; GET /part/<page> is a page's live part alone (console.js)
  POST /approve | /reject                     a pending hit (hit_id, approval_ref | reason)
  POST /suspend | /resume                     a table (table_id, reason, approval_ref to resume)
  GET  /static/<name>, /healthz

Every page but the login form needs a live session of a person the users file still lists; every POST needs the
session's CSRF token (403 without it, nothing done). jackpotd is called with the console's own credential, on
behalf of `supervisor:<name>`; the pending page's refreshes read it again only when a hit was announced since
(watch.py, live.py), since each ListHits is a row on jackpotd's audit trail.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from importlib import resources

import grpc
from aiohttp import web
from jackpot_floor.calls import Decision, FloorCalls, FloorError

from . import pages, watch, words
from .guards import Session, csrf_ok
from .live import CachedPart, use_cache
from .login import login, login_by_certificate, login_form, logout
from .state import CONSOLE, COOKIE, SESSION, Console, ConsoleSettings, html_response

__all__ = ["ConsoleSettings", "make_app"]

log = logging.getLogger("jackpot_console.app")

STATIC = resources.files("jackpot_console") / "static"
TYPES = {".css": "text/css", ".js": "text/javascript", ".svg": "image/svg+xml"}
REMOVED = "/login?removed=1"  # where a person the users file no longer lists is sent (their session ended)
OPEN = {"/login", "/login/certificate", "/healthz", "/favicon.ico"}  # what needs no session (and /static/)
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
                               "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}


def make_app(settings: ConsoleSettings, channel: Callable[[], grpc.aio.Channel],
             clock: Callable[[], float] = time.monotonic) -> web.Application:
    """The console app for one link; `channel` opens a channel to jackpotd presenting the console's credential."""
    app = web.Application(middlewares=[guard], client_max_size=64 * 1024)
    app[CONSOLE] = Console(settings, channel, clock)
    app.router.add_get("/", home)
    app.router.add_get("/login", login_form)
    app.router.add_post("/login", login)
    app.router.add_post("/login/certificate", login_by_certificate)
    app.router.add_post("/logout", logout)
    for name in pages.PAGES:
        app.router.add_get(f"/{name}", page)
    app.router.add_get("/part/{page}", part)
    app.router.add_post("/approve", act(approve))
    app.router.add_post("/reject", act(reject))
    app.router.add_post("/suspend", act(suspend))
    app.router.add_post("/resume", act(resume))
    app.router.add_get("/static/{name}", static)
    app.router.add_get("/favicon.ico", favicon)
    app.router.add_get("/healthz", healthz)
    app.on_startup.append(watch.start)
    app.on_cleanup.append(watch.stop)
    app.on_cleanup.append(_close)
    return app


async def _close(app: web.Application) -> None:
    """Close the channel to jackpotd as the app stops."""
    await app[CONSOLE].forget_channel()


async def home(request: web.Request) -> web.Response:
    """/ is the pending hits, the page a supervisor came for."""
    raise web.HTTPSeeOther("/pending")


async def favicon(request: web.Request) -> web.Response:
    """Browsers ask for /favicon.ico: the SVG one (no 404 in the console's log)."""
    raise web.HTTPMovedPermanently("/static/favicon.svg")


@web.middleware
async def guard(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
                ) -> web.StreamResponse:
    """Sessions and CSRF for everything but the open paths; the security headers on every answer."""
    try:
        response = await _guarded(request, handler)
    except web.HTTPException as e:
        e.headers.update(SECURITY_HEADERS)
        raise
    response.headers.update(SECURITY_HEADERS)
    return response


async def _guarded(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
                   ) -> web.StreamResponse:
    """Let open paths through; others need a live session, and a POST its CSRF token."""
    if request.path in OPEN or request.path.startswith("/static/"):
        return await handler(request)
    console = request.app[CONSOLE]
    live = request.path.startswith("/part/")  # console.js refreshing a page: not the person's activity
    session, expired = console.sessions.find(request.cookies.get(COOKIE), console.clock(), touch=not live)
    if session is None or session.user is None:
        if live:
            raise web.HTTPUnauthorized(text="log in again\n")
        raise web.HTTPSeeOther("/login?expired=1" if expired else "/login")
    if not console.roster.lists(session.user):
        console.sessions.close(session.sid)
        log.warning("logged %s out: the users file no longer lists them", session.user)
        if live:
            raise web.HTTPUnauthorized(text="log in again\n", headers={"X-Login": REMOVED})
        raise web.HTTPSeeOther(REMOVED)
    if request.method == "POST":
        form = await request.post()
        sent = form.get("csrf")
        if not csrf_ok(session.csrf, sent if isinstance(sent, str) else None):
            log.warning("refused a POST %s by %s from %s: CSRF token missing or wrong", request.path, session.user,
                        request.remote)
            raise web.HTTPForbidden(text="403: this form's CSRF token is missing or wrong; nothing was done. Reload "
                                         "the page and try again.\n")
    request[SESSION] = session
    return await handler(request)


# ---- the pages --------------------------------------------------------------------------------------------


async def render(console: Console, name: str, session: Session, *, afresh: bool = True) -> str:
    """A page's live part, or what stands in its way in words. Unless `afresh`, the pending hits come from the
    session's cache while no hit was announced since and it is young (live.use_cache): no ListHits then."""
    link, person, now_ms = console.settings.link, f"supervisor:{session.user}", int(time.time() * 1000)
    cached = session.pending
    if (name == "pending" and not afresh and cached is not None
            and use_cache(console.watching, console.hits_generation, cached, console.clock())):
        return cached.html
    session.pending = None
    generation = console.hits_generation  # before the read: a hit announced during it makes the next one read
    try:
        calls = console.calls()
        if name == "pending":
            html = pages.pending(await calls.pending_hits(link, on_behalf_of=person), session.csrf, now_ms)
            session.pending = CachedPart(generation, console.clock(), html)
            return html
        if name == "tables":
            return pages.tables(await calls.tables(link, on_behalf_of=person), session.csrf, now_ms)
        if name == "audit":
            return pages.audit(await calls.audit(link, 50, reads=False, on_behalf_of=person))
        return pages.pools(await calls.pools(link, on_behalf_of=person))
    except FloorError as e:
        if e.code == "UNAUTHENTICATED":
            await console.forget_channel()
        return pages.unavailable(words.refusal(e.code, e.message))
    except ValueError as e:  # CredentialsMissing among them
        return pages.unavailable(f"The console has no credential for jackpotd yet: {e}")


async def page(request: web.Request) -> web.Response:
    """A whole page: the layout, the flash messages, and the live part."""
    console, session = request.app[CONSOLE], request[SESSION]
    name = request.path.strip("/")
    inner = pages.live(name, await render(console, name, session))
    return html_response(pages.layout(pages.PAGES[name], inner, link=console.settings.link, user=session.user,
                              csrf=session.csrf, flash=session.take_flash(), active=name))


async def part(request: web.Request) -> web.Response:
    """A page's live part alone, for console.js (401 once the session is gone)."""
    name = request.match_info["page"]
    if name not in pages.PAGES:
        raise web.HTTPNotFound()
    return html_response(await render(request.app[CONSOLE], name, request[SESSION], afresh=False))


# ---- the acts ---------------------------------------------------------------------------------------------

Act = Callable[[FloorCalls, str, dict[str, str]], Awaitable[tuple[str, str]]]  # -> (message, the page to go back to)


def act(do: Act) -> Callable[[web.Request], Awaitable[web.Response]]:
    """A POST that does one thing for the person logged in, says how it went, and goes back to its page."""

    async def handler(request: web.Request) -> web.Response:
        """Do the act for the person logged in; say how it went on the page it goes back to."""
        console, session = request.app[CONSOLE], request[SESSION]
        form = {k: v for k, v in (await request.post()).items() if isinstance(v, str)}
        back = "/tables" if request.path in ("/suspend", "/resume") else "/pending"
        session.pending = None  # the page it goes back to reads afresh
        try:
            message, back = await do(console.calls(), f"supervisor:{session.user}", form)
            session.say("ok", message)
            log.info("%s %s: %s", session.user, request.path.strip("/"), message)
        except FloorError as e:
            if e.code == "UNAUTHENTICATED":
                await console.forget_channel()
            session.say("error", words.refusal(e.code, e.message))
            log.info("%s %s refused: %s: %s", session.user, request.path.strip("/"), e.code, e.message)
        except ValueError as e:  # CredentialsMissing among them
            session.say("error", f"The console has no credential for jackpotd yet: {e}")
        raise web.HTTPSeeOther(back)

    return handler


def _decided(d: Decision) -> str:
    """What an approval or rejection did, in words for the flash message."""
    what = f"{words.hand(d.hand)} {words.dollars(d.amount_cents)} from {d.pool} (hit {d.hit_id})"
    if d.status == "PAID":
        return f"Paid: {what}, approved by {', '.join(d.approved_by) or 'you'}."
    if d.status == "PENDING":
        return (f"{len(d.approved_by)} of {d.approvals_needed} approvals recorded for {what}: a second, different "
                "supervisor must approve before it is paid.")
    return f"Rejected: {what}; its amount goes back to the pool."


async def approve(calls: FloorCalls, person: str, form: dict[str, str]) -> tuple[str, str]:
    """Approve a pending hit: paid, or 1 of 2 approvals under dual control."""
    d = await calls.approve(form.get("hit_id", ""), form.get("approval_ref", ""), form.get("reason", ""),
                            form.get("request_id") or None, on_behalf_of=person)
    return _decided(d), "/pending"


async def reject(calls: FloorCalls, person: str, form: dict[str, str]) -> tuple[str, str]:
    """Reject a pending hit: its amount goes back to its pool."""
    d = await calls.reject(form.get("hit_id", ""), form.get("reason", ""), form.get("request_id") or None,
                           approval_ref=form.get("approval_ref", ""), on_behalf_of=person)
    return _decided(d), "/pending"


async def suspend(calls: FloorCalls, person: str, form: dict[str, str]) -> tuple[str, str]:
    """Suspend a table's jackpot wagers."""
    table = form.get("table_id", "")
    await calls.suspend(table, form.get("reason", ""), form.get("request_id") or None, on_behalf_of=person)
    return f"Table {table} suspended: its jackpot wagers are off until it is resumed.", "/tables"


async def resume(calls: FloorCalls, person: str, form: dict[str, str]) -> tuple[str, str]:
    """Resume a suspended table, citing an approval."""
    table = form.get("table_id", "")
    await calls.resume(table, form.get("reason", ""), form.get("approval_ref", ""), form.get("request_id") or None,
                       on_behalf_of=person)
    return f"Table {table} resumed: its jackpot wagers are on again.", "/tables"


# ---- the rest ---------------------------------------------------------------------------------------------


async def static(request: web.Request) -> web.Response:
    """The console's CSS, JS and icon, from beside this module (no build step)."""
    name = request.match_info["name"]
    suffix = name[name.rfind("."):] if "." in name else ""
    if "/" in name or name.startswith(".") or suffix not in TYPES or not (STATIC / name).is_file():
        raise web.HTTPNotFound()
    return web.Response(body=(STATIC / name).read_bytes(), content_type=TYPES[suffix],
                        headers={"Cache-Control": "no-cache"})


async def healthz(request: web.Request) -> web.Response:
    """Liveness: the link served and how many sessions are open."""
    console = request.app[CONSOLE]
    return web.json_response({"link": console.settings.link, "sessions": len(console.sessions)})
