"""The commands that need no stores: `jackpotd pools` (a running service's pools), `certs` (credentials) and
`system-account` (the embedded PostgreSQL's account)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

DEFAULT_ROLES = "admin:ops,supervisor:floor-1,display:sign-1,finance:office,console:floor-1"  # certs on a new directory


def run(args: argparse.Namespace) -> int:
    """Run one of them."""
    if args.command == "pools":
        return pools(args)
    if args.command == "certs":
        return certs(args)
    return system_account()


def pools(args: argparse.Namespace) -> int:
    import grpc

    from .api.gen.jackpot.v1 import display_pb2, display_pb2_grpc
    from .auth.credentials import credential_flags, role_credential
    from .auth.identity import Role
    from .domain.ids import visible
    from .domain.money import format_cents
    from .target import failure_line

    try:
        found = role_credential(credential_flags(args), (Role.DISPLAY, Role.FINANCE, Role.SUPERVISOR, Role.ADMIN),
                                "jackpotd-cli")
    except ValueError as e:
        print(f"jackpotd: {e}", file=sys.stderr)
        return 2
    token = found.token
    credentials = (None if found.ca is None else grpc.ssl_channel_credentials(found.ca, found.key, found.cert))
    metadata = (("authorization", f"Bearer {token}"),) if token else None
    with (grpc.secure_channel(args.target, credentials) if credentials else grpc.insecure_channel(args.target)
          ) as channel:
        stub = display_pb2_grpc.DisplayServiceStub(channel)
        try:
            resp: Any = stub.GetPools(display_pb2.GetPoolsRequest(link_id=args.link), timeout=5, metadata=metadata)
        except grpc.RpcError as e:
            if e.code() == grpc.StatusCode.UNAUTHENTICATED and not token and not credentials:
                print("jackpotd: no credential found: give --token-file, --tls or --ca/--cert/--key, or "
                      "--credentials DIR", file=sys.stderr)
            else:
                print(failure_line("jackpotd", args.target, e.code().name, e.details()), file=sys.stderr)
            return 1
    lines = [f"link {resp.link_id} (sequence {resp.sequence})"]
    lines += [f"  {p.pool:8} {format_cents(p.amount_cents):>16}   (resets to {format_cents(p.reset_cents)})"
              for p in resp.pools]
    if resp.HasField("last_hit"):
        h = resp.last_hit
        lines.append(f"  last hit: {h.hand} at {h.table_id} seat {h.seat}, {format_cents(h.amount_cents)} from "
                     f"{h.pool}")
    print("\n".join(visible(line) for line in lines))  # names from the wire drawn visibly, one line each
    return 0


def system_account() -> int:
    from .embedded import account

    if os.geteuid() != 0:
        print(f"jackpotd: not root: the embedded PostgreSQL runs as {os.environ.get('USER') or 'you'}; no account "
              "is needed")
        return 0
    try:
        made, new = account.ensure()
    except account.AccountMissing as e:
        print(f"jackpotd: {e}", file=sys.stderr)
        return 2
    print(f"{'created' if new else 'exists:'} system account {made.name} (uid {made.uid}, gid {made.gid}): the "
          "embedded PostgreSQL runs as it under root")
    return 0


def certs(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from .auth.issue import IssueError, IssueOrder, IssueStep, issue_into, parse_list, parse_roles

    out = Path(args.out)
    new = not (out / "ca.pem").exists()
    try:
        roles = parse_roles(args.roles if args.roles is not None else DEFAULT_ROLES if new else "")
        order = IssueOrder(tables=parse_list(args.tables), roles=roles, hosts=parse_list(args.hosts), days=args.days,
                           token_days=args.token_days, server=args.server, table_tokens=args.table_tokens)

        def progress(steps: list[IssueStep]) -> Any:
            return tqdm(steps, desc="issuing", unit="credential", disable=len(steps) < 20 or None, file=sys.stderr)

        done = issue_into(out, order, progress)
    except (IssueError, OSError) as e:
        print(f"jackpotd: {e}", file=sys.stderr)
        return 2
    root = out.resolve()
    for d in done.tightened:
        print(f"tightened {d} to 0700")
    if "ca.pem" in done.kept:
        print(f"reused the CA in {root} (ca.pem, ca.key)")
    if "auth.key" in done.kept:
        print(f"reused the token key {root / 'auth.key'}")
    print(f"wrote {len(done.wrote)} file(s) in {root}:")
    for rel in done.wrote:
        print(f"  {rel}")
    print(f"serve TLS with: jackpotd serve --tls-cert-file {root}/server.pem --tls-key-file {root}/server.key "
          f"--tls-ca-file {root}/ca.pem --auth-key-file {root}/auth.key --listen HOST:PORT")
    return 0
