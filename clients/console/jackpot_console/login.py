"""Logging in and out: a name and password checked against the users file (at most 5 failures a minute per name
and per client address), or, over TLS with --client-ca, the client certificate of a person in the users file.
A login gets a new session (new id, new CSRF token); the login form has an anonymous session of its own, so
that its POST carries a CSRF token too."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from aiohttp import web

from jackpotd.auth.identity import Role, from_uri

from . import pages, users
from .guards import Session, csrf_ok, limit_keys
from .state import CONSOLE, COOKIE, SESSION, Console, html_response, set_cookie

log = logging.getLogger("jackpot_console.login")


def certificate_name(request: web.Request) -> str | None:
    """The supervisor a verified client certificate names (URI SAN urn:jackpot:supervisor:<name>), or None."""
    if request.transport is None or not request.app[CONSOLE].settings.client_certificates:
        return None
    peer: Any = request.transport.get_extra_info("peercert")  # verified against --client-ca when there is one
    for kind, value in (peer or {}).get("subjectAltName", ()):
        identity = from_uri(value) if kind == "URI" else None
        if identity is not None and identity.role is Role.SUPERVISOR:
            return identity.actor
    return None


async def _known(console: Console, name: str | None) -> str | None:
    """`name` when the users file lists it (the file says who may log in at all, by password or certificate)."""
    if not name:
        return None
    try:
        return name if name in await asyncio.to_thread(users.load, console.settings.users_file) else None
    except users.UsersFileError:
        return None


def _login_page(request: web.Request, session: Session, status: int = 200, **say: str) -> web.Response:
    """The login page for this session, with what it has to say (a message, an error, the name tried)."""
    console = request.app[CONSOLE]
    return html_response(pages.login_page(console.settings.link, session.csrf, **say), status)


async def login_form(request: web.Request) -> web.Response:
    """The login form, with an anonymous session for its CSRF token (a live login goes on)."""
    console = request.app[CONSOLE]
    now = console.clock()
    console.sessions.sweep(now)
    session, expired = console.sessions.find(request.cookies.get(COOKIE), now)
    if session is not None and session.user is not None:
        raise web.HTTPSeeOther("/pending")
    if session is None:
        session = console.sessions.open(now)
    message = ""
    if expired or request.query.get("expired"):
        message = (f"Your session expired after {_duration(console.settings.session_seconds)} without activity: "
                   "log in again.")
    elif request.query.get("removed"):
        message = "You were logged out: the console's users file no longer lists you."
    certificate = await _known(console, certificate_name(request)) or ""
    response = _login_page(request, session, message=message, certificate=certificate)
    set_cookie(response, console, session)
    return response


async def _anonymous(request: web.Request) -> tuple[Session, dict[str, str]]:
    """The login form's session and its fields; 403 when its CSRF token is missing or wrong."""
    console = request.app[CONSOLE]
    session, _ = console.sessions.find(request.cookies.get(COOKIE), console.clock())
    form = {k: v for k, v in (await request.post()).items() if isinstance(v, str)}
    if session is None or not csrf_ok(session.csrf, form.get("csrf")):
        raise web.HTTPForbidden(text="403: the login form's CSRF token is missing or wrong (or its session "
                                     "expired); reload the login page.\n")
    return session, form


def _logged_in(console: Console, old: Session, name: str) -> web.HTTPSeeOther:
    """Replace the login form's session by the person's (a new id: no fixation)."""
    console.sessions.close(old.sid)
    fresh = console.sessions.open(console.clock(), user=name)  # now: a password's hash takes a while
    response = web.HTTPSeeOther("/pending")
    set_cookie(response, console, fresh)
    return response


async def login(request: web.Request) -> web.Response:
    """Check the name and password (at most 5 failures a minute per name and per address), then a new session."""
    console = request.app[CONSOLE]
    session, form = await _anonymous(request)
    name, password = form.get("name", ""), form.get("password", "")
    keys = limit_keys(name[:64], request.remote or "")
    wait = console.limiter.wait(keys, console.clock())
    if wait > 0:
        log.warning("refused a login as %r from %s: too many failed logins", name[:64], request.remote)
        return _login_page(request, session, 429, name=name, error=(
            f"Too many failed logins for this name or from this address: try again in {int(wait) + 1} s."))
    try:
        known = await asyncio.to_thread(users.load, console.settings.users_file)
    except users.UsersFileError as e:
        log.error("cannot read the users file: %s", e)
        return _login_page(request, session, 500, name=name, error="The console cannot read its users file; see "
                                                                   "its log.")
    if not await asyncio.to_thread(users.verify, known, name, password):
        console.limiter.failed(keys, console.clock())
        log.info("failed login as %r from %s", name[:64], request.remote)
        return _login_page(request, session, 401, name=name, error="Wrong name or password.")
    log.info("%s logged in from %s", name, request.remote)
    raise _logged_in(console, session, name)


async def login_by_certificate(request: web.Request) -> web.Response:
    """Log in as the person the verified client certificate names, when the users file lists them."""
    console = request.app[CONSOLE]
    session, _ = await _anonymous(request)
    name = await _known(console, certificate_name(request))
    if name is None:
        raise web.HTTPForbidden(text="403: no client certificate of a supervisor in the users file was presented.\n")
    log.info("%s logged in from %s by client certificate", name, request.remote)
    raise _logged_in(console, session, name)


async def logout(request: web.Request) -> web.Response:
    """End the session and go back to the login form."""
    console = request.app[CONSOLE]
    session: Session = request[SESSION]
    console.sessions.close(session.sid)
    log.info("%s logged out", session.user)
    response = web.HTTPSeeOther("/login")
    response.del_cookie(COOKIE, path="/")
    raise response


def _duration(seconds: float) -> str:
    """A session's lifetime in words: "15 min", "1 s"."""
    return f"{seconds / 60:g} min" if seconds >= 60 else f"{seconds:g} s"
