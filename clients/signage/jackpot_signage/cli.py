"""`jackpot-signage`: serve full-screen floor signs of jackpotd's linked pools to kiosk browsers."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import grpc
from aiohttp import web

from jackpotd.auth.client import bearer, open_channel
from jackpotd.auth.credentials import configured_auth_key, default_credentials_dir, role_certificate, role_token
from jackpotd.auth.identity import Role
from jackpotd.auth.tokens import issue, read_key

from .app import LINK_ID, make_app
from .feed import CredentialsMissing

log = logging.getLogger("jackpot_signage")

ROLES = (Role.DISPLAY, Role.FINANCE, Role.SUPERVISOR, Role.ADMIN)  # what may watch pools, a sign's role first

EPILOG = """Open http://HOST:PORT/links/LINK in a kiosk browser (full screen); / redirects to the first --link.
The server keeps one WatchPools stream per link, reopened with backoff whenever it fails, and passes it on
to every browser as Server-Sent Events (GET /links/LINK/events). A browser shows LINK OFFLINE while the
stream is down or it hears nothing for 6 s, and reconnects by itself.

Credentials, as any sign (README, Security). Plain text (a loopback jackpotd): a display token from
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
    p.add_argument("--target", default="127.0.0.1:50051", help="jackpotd address (default 127.0.0.1:50051)")
    p.add_argument("--host", default="127.0.0.1", help="address to serve the pages on (default 127.0.0.1; "
                                                       "0.0.0.0 for signs on the network)")
    p.add_argument("--port", type=int, default=8080, help="port to serve the pages on (default 8080)")
    p.add_argument("--celebrate-seconds", type=float, default=8.0,
                   help="how long a hit's celebration stays on the sign before the new amount (default 8)")
    p.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING (default INFO)")
    g = p.add_argument_group("credentials (see below)")
    g.add_argument("--credentials", metavar="DIR", help="a credentials directory (`jackpotd certs`, or the "
                                                        "development one); default $JACKPOTD_STATE_DIR/"
                                                        "credentials or state/credentials")
    g.add_argument("--token-file", help="plain text: present the bearer token in this file")
    g.add_argument("--tls", action="store_true", help="TLS with the credentials directory's ca.pem and a role "
                                                      "certificate from its roles/")
    g.add_argument("--ca", help="TLS: the CA certificate that signed the server's certificate")
    g.add_argument("--cert", help="TLS: the client certificate to present")
    g.add_argument("--key", help="TLS: the client certificate's private key")
    g.add_argument("--certs-dir", metavar="DIR", help="TLS: a directory with the role certificates "
                                                      "(<role>-<name>.pem and .key; default the credentials "
                                                      "directory's roles/)")
    return p


@dataclass(frozen=True)
class Credentials:
    """What the sign presents: a bearer token on plain text, or a client certificate over TLS."""

    token: str | None = None
    ca: bytes | None = None
    cert: bytes | None = None
    key: bytes | None = None

    def channel(self, target: str) -> grpc.aio.Channel:
        options = [("grpc.keepalive_time_ms", 10_000), ("grpc.keepalive_timeout_ms", 5_000)]
        if self.ca is not None:
            return open_channel(target, ca=self.ca, cert=self.cert, key=self.key, options=options)
        return open_channel(target, interceptors=bearer(self.token) if self.token else [], options=options)


def check_flags(args: argparse.Namespace) -> str | None:
    """What is wrong with the flags as such (files that are not there yet are waited for instead)."""
    for link in args.link:
        if not LINK_ID.match(link):
            return f"--link {link!r}: 1-64 characters of A-Z a-z 0-9 . _ -"
    tls = bool(args.tls or args.ca)
    if bool(args.cert) != bool(args.key):
        return "--cert and --key go together"
    if (args.cert or args.certs_dir) and not tls:
        return "--cert, --key and --certs-dir are for TLS: give --ca or --tls"
    if tls and args.token_file:
        return "--token-file is for plain text; over TLS the sign presents a certificate"
    return None


def credentials_of(args: argparse.Namespace) -> Credentials:
    """The credential the flags name, read now (they may appear later: raises CredentialsMissing)."""
    root = Path(args.credentials) if args.credentials else default_credentials_dir()
    try:
        if args.tls or args.ca:
            ca = Path(args.ca) if args.ca else root / "ca.pem"
            cert, key = (Path(args.cert), Path(args.key)) if args.cert else (None, None)
            if cert is None:
                found = role_certificate(Path(args.certs_dir) if args.certs_dir else root, ROLES)
                if found is None:
                    raise CredentialsMissing(f"no role certificate in {args.certs_dir or root / 'roles'}: give "
                                             "--cert and --key, or issue one with `jackpotd certs --roles`")
                cert, key = found
            return Credentials(ca=ca.read_bytes(), cert=cert.read_bytes(), key=key.read_bytes() if key else None)
        if args.token_file:
            return Credentials(token=Path(args.token_file).read_text().strip())
        configured = None if args.credentials else configured_auth_key()
        if configured is not None:
            return Credentials(token=issue(read_key(configured), Role.DISPLAY, "signage"))
        token = role_token(root, ROLES, "signage")
    except OSError as e:
        raise CredentialsMissing(str(e)) from None
    if token is None:
        raise CredentialsMissing(f"{root} has no tokens/display-*.token nor auth.key yet (`jackpotd serve --demo` "
                                 "issues them); or give --token-file, --tls, or --ca with --cert/--key")
    return Credentials(token=token)


def channel_factory(args: argparse.Namespace) -> Callable[[str], grpc.aio.Channel]:
    """Channels presenting the sign's credential, read afresh for each new stream (a token renewed on disk is
    picked up at the next reconnection)."""

    def channel(target: str) -> grpc.aio.Channel:
        return credentials_of(args).channel(target)

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
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
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
    except OSError as e:
        print(f"jackpot-signage: cannot serve on {args.host}:{args.port}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
