"""`jackpot-console`: the floor's web console (serve), and its users file (users add|passwd|remove|list)."""

from __future__ import annotations

import argparse
import asyncio
import getpass
import logging
import ssl
import sys
from collections.abc import Callable
from pathlib import Path

import grpc
from aiohttp import web
from jackpot_floor.calls import floor_channel

from jackpotd.api.transport import is_loopback
from jackpotd.auth.credentials import AmbiguousCredential, CredentialFlags, role_credential
from jackpotd.auth.identity import Role
from jackpotd.domain.errors import InvalidInput
from jackpotd.domain.ids import ID_GRAMMAR, require_id, visible
from jackpotd.signals import stop_on_signals
from jackpotd.target import add_target_flag

from . import users
from .app import make_app
from .state import ConsoleSettings

log = logging.getLogger("jackpot_console")

EPILOG = """examples:
  jackpot-console users add alice                  # asks for alice's password twice
  jackpot-console serve --link demo                # http://127.0.0.1:8090 (plain text: loopback only)
  jackpot-console serve --host 0.0.0.0 --cert console.pem --key console.key   # TLS for the floor's network

Each supervisor logs in as themselves (a password, stored as an argon2id hash in the users file) and every act
is done for them: the console calls jackpotd with its own `console` credential and names the person in the
x-jackpot-on-behalf-of metadata, so the audit trail reads "console:floor-1 for supervisor:alice".
Sessions end after --session-minutes without a request; every form carries a CSRF token; a sixth failed
login in a minute, for one name or from one address, is refused.

The console's credential for jackpotd, as any client's (docs/SECURITY.md): plain text (a loopback jackpotd):
--token-file, else one minted with $JACKPOTD_AUTH_KEY_FILE, else the credentials directory's
tokens/console-*.token or one minted with its auth.key (`jackpotd serve --demo` issues console:floor-1 under
state/credentials). TLS to jackpotd (--jackpotd-tls or --jackpotd-ca): a console role certificate."""


def parser() -> argparse.ArgumentParser:
    """The command line: serve, and users add|passwd|remove|list."""
    p = argparse.ArgumentParser(prog="jackpot-console", description=__doc__, epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve", help="serve the console", epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("--link", default="demo", help="the link the console shows (default demo)")
    add_target_flag(s)
    s.add_argument("--host", default="127.0.0.1", help="address to serve on (default 127.0.0.1; another than "
                                                       "loopback needs --cert and --key)")
    s.add_argument("--port", type=int, default=8090, help="port to serve on (default 8090)")
    s.add_argument("--cert", help="serve TLS with this certificate (PEM, its chain after it)")
    s.add_argument("--key", help="the certificate's private key (PEM)")
    s.add_argument("--client-ca", metavar="FILE", help="TLS: ask browsers for a client certificate signed by this "
                                                       "CA; one naming urn:jackpot:supervisor:NAME of a person in "
                                                       "the users file logs them in without a password")
    s.add_argument("--users", metavar="FILE", help="the users file (default $JACKPOTD_STATE_DIR/console/users.json "
                                                   "or state/console/users.json)")
    s.add_argument("--session-minutes", type=float, default=15.0,
                   help="a session ends after this long without a request (default 15)")
    s.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING (default INFO)")
    g = s.add_argument_group("the console's credential for jackpotd")
    g.add_argument("--credentials", metavar="DIR", help="a credentials directory (default $JACKPOTD_STATE_DIR/"
                                                        "credentials or state/credentials)")
    g.add_argument("--token-file", help="present the bearer token in this file (plain text); default "
                                        "$JACKPOTD_TOKEN_FILE when it holds a console token; of several "
                                        "tokens/console-*.token none is picked (exit 2, listing them)")
    g.add_argument("--name", default="floor-1", help="the console's name in a token minted from an auth key "
                                                     "(default floor-1)")
    g.add_argument("--jackpotd-tls", action="store_true", help="TLS to jackpotd with the credentials directory's "
                                                              "ca.pem and a console certificate from its roles/")
    g.add_argument("--jackpotd-ca", metavar="FILE", help="TLS to jackpotd: the CA that signed its certificate")
    g.add_argument("--jackpotd-cert", metavar="FILE", help="TLS to jackpotd: the console's client certificate")
    g.add_argument("--jackpotd-key", metavar="FILE", help="TLS to jackpotd: that certificate's private key")
    u = sub.add_parser("users", help="manage the users file: add, passwd, remove, list")
    u.add_argument("action", choices=("add", "passwd", "remove", "list"))
    u.add_argument("name", nargs="?", help="the person's name (" + ID_GRAMMAR + ")")
    u.add_argument("--users", metavar="FILE", help="the users file (default as for serve)")
    u.add_argument("--password-stdin", action="store_true", help="read the password from the first line of stdin "
                                                                 "(scripts) instead of asking twice")
    return p


def credential_flags(args: argparse.Namespace) -> CredentialFlags:
    """The console's credential flags, as the credential lookup of every CLI takes them."""
    return CredentialFlags(args.credentials, args.token_file, args.jackpotd_tls, args.jackpotd_ca,
                           args.jackpotd_cert, args.jackpotd_key, None)


def channel_factory(args: argparse.Namespace) -> Callable[[], grpc.aio.Channel]:
    """Channels to jackpotd presenting the console's credential, read afresh each time one is opened."""

    def channel() -> grpc.aio.Channel:
        """A channel presenting the console's credential as it is on disk now."""
        return floor_channel(role_credential(credential_flags(args), (Role.CONSOLE,), args.name), args.target)

    return channel


def check_serve(args: argparse.Namespace) -> str | None:
    """What is wrong with serve's flags: plain text off loopback, half a TLS setup, a bad link id."""
    try:
        require_id("--link", args.link)
    except InvalidInput:
        return f"--link {args.link!r}: must be {ID_GRAMMAR}"
    if bool(args.cert) != bool(args.key):
        return "--cert and --key go together"
    if args.client_ca and not args.cert:
        return "--client-ca is for TLS: give --cert and --key too"
    if not args.cert and not is_loopback(f"{args.host}:{args.port}"):
        return (f"--host {args.host}: plain text is allowed on loopback only; give --cert and --key to serve TLS, "
                "or serve on 127.0.0.1")
    if args.session_minutes <= 0:
        return f"--session-minutes {args.session_minutes:g}: must be more than 0"
    try:
        role_credential(credential_flags(args), (Role.CONSOLE,), args.name)
    except ValueError as e:
        # flags that do not go together, or several console credentials and none chosen (a missing file is
        # waited for instead)
        if type(e) is ValueError or isinstance(e, AmbiguousCredential):
            return str(e)
    return None


def tls_context(cert: str, key: str, client_ca: str | None = None) -> ssl.SSLContext:
    """TLS 1.2 or later with the console's certificate; with `client_ca`, a client certificate is asked for
    (optional: the password form stays) and verified against it."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert, key)
    if client_ca:
        context.load_verify_locations(client_ca)
        context.verify_mode = ssl.CERT_OPTIONAL
    return context


async def serve(args: argparse.Namespace) -> None:
    """Serve the console until SIGINT or SIGTERM."""
    users_file = Path(args.users) if args.users else users.default_users_file()
    settings = ConsoleSettings(args.link, users_file, args.session_minutes * 60, tls=bool(args.cert),
                               client_certificates=bool(args.client_ca))
    context = tls_context(args.cert, args.key, args.client_ca) if args.cert else None
    runner = web.AppRunner(make_app(settings, channel_factory(args)), access_log=None, handle_signals=False,
                           shutdown_timeout=1)
    await runner.setup()
    try:
        await web.TCPSite(runner, args.host, args.port, ssl_context=context).start()
    except BaseException:
        await runner.cleanup()
        raise
    scheme = "https" if context else "http"
    shown = f"[{args.host}]" if ":" in args.host else args.host
    log.info("console of link %s: %s://%s:%d/ (jackpotd at %s; users in %s)", args.link, scheme, shown, args.port,
             args.target, users_file)
    if not users.load(users_file):
        log.warning("%s has no users yet: add one with `jackpot-console users add NAME`", users_file)
    stop = asyncio.Event()
    stop_on_signals(stop)
    try:
        await stop.wait()
    finally:
        log.info("stopping")
        await runner.cleanup()


def read_password(from_stdin: bool) -> str:
    """A new password: the first line of stdin, or asked twice without echo."""
    if from_stdin:
        return sys.stdin.readline().rstrip("\n")
    first = getpass.getpass("New password: ")
    if getpass.getpass("Again: ") != first:
        raise users.UsersFileError("the two passwords differ")
    return first


def manage(args: argparse.Namespace) -> int:
    """users add|passwd|remove|list on the users file."""
    path = Path(args.users) if args.users else users.default_users_file()
    if args.action == "list":
        for user in sorted(users.load(path).values(), key=lambda u: u.name):
            print(visible(user.name))  # a hand-edited users file cannot drive the terminal either
        return 0
    if not args.name:
        raise users.UsersFileError(f"users {args.action}: give the person's NAME")
    if args.action == "remove":
        users.remove(path, args.name)
        print(f"jackpot-console: removed {args.name} from {path} (their open sessions end at their next request)")
        return 0
    users.check_name(args.name)
    users.add(path, args.name, read_password(args.password_stdin), replace=args.action == "passwd")
    print(f"jackpot-console: {'added' if args.action == 'add' else 'changed the password of'} {args.name} in {path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Exit 0, or 2 for flags, files or ports that cannot be used (said on stderr)."""
    args = parser().parse_args(argv)
    if args.command == "users":
        try:
            return manage(args)
        except (users.UsersFileError, OSError) as e:
            print(f"jackpot-console: {e}", file=sys.stderr)
            return 2
        except (KeyboardInterrupt, EOFError):
            return 130
    problem = check_serve(args)
    if problem:
        print(f"jackpot-console: {problem}", file=sys.stderr)
        return 2
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)-7s %(name)s: %(message)s")
    try:
        asyncio.run(serve(args))
    except (OSError, ssl.SSLError) as e:  # the port is taken, the address is not this host's, a bad certificate
        print(f"jackpot-console: cannot serve on {args.host}:{args.port}: {e.strerror or e}; choose another "
              "--port, or check --cert and --key", file=sys.stderr)
        return 2
    except users.UsersFileError as e:
        print(f"jackpot-console: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
