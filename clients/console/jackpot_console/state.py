"""The console's state shared by its handlers: its settings, sessions, login limiter and floor calls."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import grpc
from aiohttp import web
from jackpot_floor.calls import FloorCalls

from .guards import LoginLimiter, Session, Sessions
from .users import Roster

COOKIE = "jackpot_console"


@dataclass(frozen=True)
class ConsoleSettings:
    """What a console serves: one link, its users file, how long an idle session lives, and whether over TLS."""

    link: str
    users_file: Path
    session_seconds: float = 15 * 60
    tls: bool = False
    client_certificates: bool = False  # TLS asks for a client certificate (--client-ca): a person may log in by one


class Console:
    """The console's state: sessions, the failed-login limiter, the users file's names, the hits generation, and
    the floor calls over one channel to jackpotd (opened when first needed, reopened after jackpotd refuses the
    console's credential)."""

    def __init__(self, settings: ConsoleSettings, channel: Callable[[], grpc.aio.Channel],
                 clock: Callable[[], float] = time.monotonic) -> None:
        """No channel yet: it opens when first needed."""
        self.settings = settings
        self.sessions = Sessions(settings.session_seconds)
        self.limiter = LoginLimiter()
        self.roster = Roster(settings.users_file)  # who is still in the users file (checked at every request)
        self.clock = clock
        self.watching = False  # the follower of the link's hits is connected (watch.py)
        self.hits_generation = 0  # bumped on each (re)connection of the follower and each hit it sees announced
        self._open_channel = channel
        self._channel: grpc.aio.Channel | None = None
        self._calls: FloorCalls | None = None

    def calls(self) -> FloorCalls:
        """The floor calls; ValueError (CredentialsMissing among them) when the console has no credential."""
        if self._calls is None:
            self._channel = self._open_channel()
            self._calls = FloorCalls(self._channel)
        return self._calls

    async def forget_channel(self) -> None:
        """Close the channel; the next call reads the credential afresh and opens another."""
        channel, self._channel, self._calls = self._channel, None, None
        if channel is not None:
            await channel.close(None)


CONSOLE: web.AppKey[Console] = web.AppKey("console", Console)
SESSION: web.RequestKey[Session] = web.RequestKey("session", Session)  # the live session the guard found


def html_response(text: str, status: int = 200) -> web.Response:
    """An HTML answer, never cached (pages carry CSRF tokens and live figures)."""
    return web.Response(text=text, content_type="text/html", status=status, headers={"Cache-Control": "no-store"})


def set_cookie(response: web.StreamResponse, console: Console, session: Session) -> None:
    """The session cookie: HttpOnly, SameSite=Strict, Secure under TLS, for the whole site."""
    response.set_cookie(COOKIE, session.sid, httponly=True, samesite="Strict", secure=console.settings.tls,
                        path="/")
