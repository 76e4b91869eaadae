"""`jackpot-signage`: serve full-screen floor signs of jackpotd's linked pools to kiosk browsers."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Callable

import grpc
from aiohttp import web

from jackpotd.auth.client import bearer, open_channel
from jackpotd.auth.credentials import (
    CredentialsMissing,
    RoleCredential,
    add_credential_flags,
    credential_flags,
    role_credential,
)
from jackpotd.auth.identity import Role
from jackpotd.signals import stop_on_signals
from jackpotd.target import add_target_flag

from .app import CELEBRATE_MAX, LINK_ID, make_app

log = logging.getLogger("jackpot_signage")

ROLES = (Role.DISPLAY, Role.FINANCE, Role.SUPERVISOR, Role.ADMIN)  # what may watch pools, a sign's role first

EPILOG = """Open http://HOST:PORT/links/LINK in a kiosk browser (full screen); / redirects to the first --link.
The server keeps one WatchPools stream per link, reopened with backoff whenever it fails, and passes it on
to every browser as Server-Sent Events (GET /links/LINK/events). A browser shows LINK OFFLINE while the
stream is down or it hears nothing for 6 s, and reconnects by itself.

Credentials, as any sign (docs/SECURITY.md). Plain text (a loopback jackpotd): a display token from
--token-file, else one minted with $JACKPOTD_AUTH_KEY_FILE when that is set, else a token from the
credentials directory's tokens/ (display, finance, supervisor or admin, in that order) or one minted with its
auth.key: the development credentials `jackpotd serve --demo` issues under state/credentials. TLS (--tls, or
--ca): a role certificate from --cert/--key, or from the credentials directory's roles/. Until the
credentials and jackpotd are there, the sign shows LINK OFFLINE and keeps trying."""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="jackpot-signage", description=__doc__, epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--link", action="append", required=True, metavar="LINK",
                   help="a link to show (repeat for more); / redirects to the first")
    add_target_flag(p)
    p.add_argument("--host", default="127.0.0.1", help="address to serve the pages on (default 127.0.0.1; "
                                                       "0.0.0.0 for signs on the network)")
    p.add_argument("--port", type=int, default=8080, help="port to serve the pages on (default 8080)")
    p.add_argument("--celebrate-seconds", type=float, default=8.0,
                   help="how long a MAJOR or JACKPOT hit fills the screen when no other waits (at most 8, the "
                        "default); other hits show as banners over the pools, and a backlog is summarised")
    p.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING (default INFO)")
    add_credential_flags(p)
    return p


def sign_channel(credential: RoleCredential, target: str) -> grpc.aio.Channel:
    """A channel to jackpotd presenting the sign's credential, with keepalives (a dead peer is noticed)."""
    options = [("grpc.keepalive_time_ms", 10_000), ("grpc.keepalive_timeout_ms", 5_000)]
    if credential.ca is not None:
        return open_channel(target, ca=credential.ca, cert=credential.cert, key=credential.key, options=options)
    return open_channel(target, interceptors=bearer(credential.token) if credential.token else [], options=options)


def check_flags(args: argparse.Namespace) -> str | None:
    """What is wrong with the flags as such (files that are not there yet are waited for instead)."""
    for link in args.link:
        if not LINK_ID.match(link):
            return f"--link {link!r}: 1-64 characters of A-Z a-z 0-9 . _ -"
    if not 0 <= args.celebrate_seconds <= CELEBRATE_MAX:
        return (f"--celebrate-seconds {args.celebrate_seconds:g}: from 0 to {CELEBRATE_MAX:g} (a celebration must "
                "not hide the pools for longer)")
    try:
        role_credential(credential_flags(args), ROLES, "signage")
    except CredentialsMissing:
        return None  # not there yet: the sign waits for it
    except ValueError as e:
        return str(e)
    return None


def channel_factory(args: argparse.Namespace) -> Callable[[str], grpc.aio.Channel]:
    """Channels presenting the sign's credential, read afresh for each new stream (a token renewed on disk is
    picked up at the next reconnection)."""

    def channel(target: str) -> grpc.aio.Channel:
        return sign_channel(role_credential(credential_flags(args), ROLES, "signage"), target)

    return channel


async def serve(args: argparse.Namespace) -> None:
    app = make_app(args.target, channel_factory(args), args.link, celebrate_seconds=args.celebrate_seconds)
    runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=1)
    await runner.setup()
    site = web.TCPSite(runner, args.host, args.port)
    await site.start()
    shown = "127.0.0.1" if args.host in ("0.0.0.0", "") else f"[{args.host}]" if ":" in args.host else args.host
    for link in args.link:
        log.info("sign of link %s: http://%s:%d/links/%s (pools from jackpotd at %s)", link, shown, args.port, link,
                 args.target)
    stop = asyncio.Event()
    stop_on_signals(stop)
    try:
        await stop.wait()
    finally:
        log.info("stopping")
        await runner.cleanup()


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    problem = check_flags(args)
    if problem:
        print(f"jackpot-signage: {problem}", file=sys.stderr)
        return 2
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)-7s %(name)s: %(message)s")
    try:
        asyncio.run(serve(args))
    except OSError as e:  # the port is taken (another sign?) or the address is not this host's: never carry on
        print(f"jackpot-signage: cannot serve on {args.host}:{args.port}: {e.strerror or e}; choose another --port "
              "(make run: SIGN_PORT=...)", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
