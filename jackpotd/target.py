"""Where the command-line clients find jackpotd (--target, else $JACKPOTD_TARGET, else 127.0.0.1:50051), and the
one line each prints when jackpotd cannot be reached or refuses a call (issue 32): one way for every CLI, so
that a moved port needs one export and a failure is never a traceback."""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Mapping

from .domain.ids import visible

DEFAULT_TARGET = "127.0.0.1:50051"
TARGET_ENV = "JACKPOTD_TARGET"
START_HINT = f"is it running? start it with `make run`, or set --target/{TARGET_ENV}"

_HOST = r"(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?)"
_HOST_PORT = re.compile(rf"{_HOST}:(?P<port>[0-9]{{1,5}})")
_URI = re.compile(r"(?:dns|unix|unix-abstract|ipv4|ipv6|vsock):\S+")  # gRPC's own name syntax, passed as it is
# what grpc says when no connection was made (as opposed to a server answering UNAVAILABLE with a reason)
_TRANSPORT = re.compile(r"failed to connect to all addresses|errors? resolving|DNS resolution failed|Socket closed|"
                        r"connections to all backends failing|handshake failed|Connection reset by peer|Broken pipe",
                        re.IGNORECASE)


class FromEnvironment(str):
    """A --target default taken from $JACKPOTD_TARGET, so that a bad one is reported under that name."""


def target_problem(text: str) -> str | None:
    """Why `text` is not a jackpotd address (host:port with a port 1-65535, [v6]:port, or a gRPC URI such as
    unix:/path); None when it is one."""
    if _URI.fullmatch(text):
        return None
    found = _HOST_PORT.fullmatch(text)
    if found is None:
        return "not host:port (e.g. 127.0.0.1:50051)"
    if not 1 <= int(found["port"]) <= 65535:
        return "its port must be 1-65535"
    return None


def default_target(environ: Mapping[str, str] | None = None) -> str:
    """$JACKPOTD_TARGET when it is set (even empty: checked when used, as a FromEnvironment), else
    127.0.0.1:50051."""
    env = os.environ if environ is None else environ
    value = env.get(TARGET_ENV)
    return DEFAULT_TARGET if value is None else FromEnvironment(value)


def checked_target(text: str) -> str:
    """`text` when it is an address (argparse `type`); a usage error naming $JACKPOTD_TARGET and its value when
    that is where a bad one came from, else --target."""
    problem = target_problem(text)
    if problem is None:
        return str(text)
    source = f"${TARGET_ENV}" if isinstance(text, FromEnvironment) else "--target"
    raise argparse.ArgumentTypeError(f"{source} is {str(text)[:80]!r}: {problem}")


def add_target_flag(parser: argparse.ArgumentParser | argparse._ArgumentGroup, extra: str = "") -> None:
    """--target, defaulting to $JACKPOTD_TARGET or 127.0.0.1:50051, checked as parsed (exit 2 when malformed)."""
    default = default_target()
    now = f"; now {default}".replace("%", "%%") if isinstance(default, FromEnvironment) else ""
    parser.add_argument("--target", default=default, type=checked_target, metavar="HOST:PORT",
                        help=f"jackpotd's address{extra} (default ${TARGET_ENV} when set{now}, else {DEFAULT_TARGET})")


def is_unreachable(code: str, details: str | None) -> bool:
    """Whether a failed call never reached jackpotd (no connection) rather than being answered."""
    return code == "UNAVAILABLE" and _TRANSPORT.search(details or "") is not None


def failure_line(prog: str, target: str, code: str, details: str | None) -> str:
    """The one line a CLI prints for a failed call: what happened and what to do. `code` is the gRPC status's
    name (UNAVAILABLE, FAILED_PRECONDITION ...)."""
    said = visible(details or "")  # one line: a line break or an escape code is drawn, never acted on
    if is_unreachable(code, details):
        cause = "" if "refused" in said.lower() else f" ({said})"
        return f"{prog}: jackpotd at {target} is unreachable (UNAVAILABLE): {START_HINT}{cause}"
    if code == "DEADLINE_EXCEEDED":
        return (f"{prog}: jackpotd at {target} did not answer in time (DEADLINE_EXCEEDED): {START_HINT}; if it "
                "is busy, try again")
    if code == "UNAVAILABLE":
        return (f"{prog}: UNAVAILABLE: {said}: jackpotd at {target} cannot serve this now; the same command is safe "
                "to retry")
    if code == "UNAUTHENTICATED":
        return (f"{prog}: UNAUTHENTICATED: {said}: give a credential jackpotd at {target} trusts (--token-file, "
                "--credentials DIR, or --tls)")
    if code == "PERMISSION_DENIED":
        return f"{prog}: PERMISSION_DENIED: {said}: use a credential whose role may do this"
    return f"{prog}: {code}: {said}"
