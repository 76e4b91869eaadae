"""`jackpotd fund` and `jackpotd update-link`: an administrator's routine acts through the running service's API
(AdminService), with the same credential lookup as `jackpotd pools`, so no hand-built gRPC call is needed."""

from __future__ import annotations

import argparse
import sys
import uuid
from typing import Any

from .auth.credentials import add_credential_flags
from .target import add_target_flag, failure_line

EXAMPLES = """examples:
  jackpotd fund --link demo --pool MAJOR --cents 50000 --reason "top-up" --ref FIN-2026-114
  jackpotd update-link --link demo --dual-approval-threshold-cents 1000000 --reason "dual control from $10,000" \\
      --ref REG-APPROVAL-77

Each act is recorded in the audit trail with the administrator the credential names, the reason and the approval
reference. --request-id makes a retry safe: the same id and content are answered as the first time."""


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The two commands' flags."""
    f = sub.add_parser("fund", help="add operator money to a pool through the API (AdminService.FundPool)",
                       description="Add operator money to a link's pool (RULES.md §5.7 top-up).", epilog=EXAMPLES,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    f.add_argument("--pool", required=True, help="MAJOR, MINOR, JACKPOT or RESERVE")
    f.add_argument("--cents", type=int, required=True, help="the amount in cents, e.g. 50000 for $500.00")
    u = sub.add_parser("update-link", help="change a link's wager or thresholds through the API "
                                           "(AdminService.UpdateLink)",
                       description="Change a link's jackpot wager, verification threshold or dual-control "
                                   "threshold; what is not given is unchanged (RULES.md §7).", epilog=EXAMPLES,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    u.add_argument("--wager-cents", type=int, default=0, help="the jackpot wager in cents")
    u.add_argument("--verification-threshold-cents", type=int, default=None,
                   help="a hit above this waits for a supervisor (0: none)")
    u.add_argument("--dual-approval-threshold-cents", type=int, default=None,
                   help="a hit at or above this needs two different supervisors (0: off; NM 15.1.24.12)")
    u.add_argument("--rtp-override-ref", default="", metavar="REF",
                   help="accept a change that leaves a game returning 100%% or more of the wager at the reset values "
                        "(a seeded promotion), citing its approval; recorded in the audit trail. Without it such a "
                        "change is refused (issue 33)")
    for p in (f, u):
        p.add_argument("--link", default="demo", help="link id (default demo)")
        p.add_argument("--reason", required=True, help="why (recorded in the audit trail)")
        p.add_argument("--ref", required=True, help="the approval reference (e.g. the regulator's approval)")
        p.add_argument("--request-id", default="", help="the request id (default: a new one)")
        add_target_flag(p)
        add_credential_flags(p)


def run(args: argparse.Namespace) -> int:
    """Send the act as an administrator; 0 when it was done, 1 when the service refused it, 2 for credentials."""
    import grpc

    from .api.gen.jackpot.v1 import admin_pb2, admin_pb2_grpc
    from .auth.credentials import credential_flags, role_credential
    from .auth.identity import Role
    from .domain.ids import visible
    from .domain.money import format_cents

    try:
        found = role_credential(credential_flags(args), (Role.ADMIN,), "jackpotd-cli")
    except ValueError as e:
        print(f"jackpotd: {e}", file=sys.stderr)
        return 2
    channel_credentials = (None if found.ca is None
                           else grpc.ssl_channel_credentials(found.ca, found.key, found.cert))
    metadata = (("authorization", f"Bearer {found.token}"),) if found.token else None
    audit = admin_pb2.Audit(reason=args.reason, approval_ref=args.ref)
    request_id = args.request_id or uuid.uuid4().hex
    as_whom = f" as {found.who}" if found.who else ""  # every act says whom the credential named
    with (grpc.secure_channel(args.target, channel_credentials) if channel_credentials
          else grpc.insecure_channel(args.target)) as channel:
        stub = admin_pb2_grpc.AdminServiceStub(channel)
        try:
            if args.command == "fund":
                funded: Any = stub.FundPool(admin_pb2.FundPoolRequest(
                    request_id=request_id, link_id=args.link, pool=args.pool, amount_cents=args.cents, audit=audit),
                    timeout=10, metadata=metadata)
                print(visible(f"funded {args.pool} of {args.link} with {format_cents(args.cents)}{as_whom} (entry "
                              f"{funded.sequence})"))
                for p in funded.pools:
                    print(visible(f"  {p.pool:8} {format_cents(p.amount_cents):>16}"))
                return 0
            update = admin_pb2.UpdateLinkRequest(request_id=request_id, link_id=args.link,
                                                 wager_amount_cents=args.wager_cents, audit=audit)
            if args.verification_threshold_cents is not None:
                update.verification_threshold_cents = args.verification_threshold_cents
            if args.dual_approval_threshold_cents is not None:
                update.dual_approval_threshold_cents = args.dual_approval_threshold_cents
            if args.rtp_override_ref:
                update.rtp_override.approval_ref = args.rtp_override_ref
                update.rtp_override.reason = args.reason
            changed: Any = stub.UpdateLink(update, timeout=10, metadata=metadata)
            print(visible(f"link {changed.link_id}: configuration version {changed.config_version}{as_whom} (entry "
                          f"{changed.sequence})"))
            return 0
        except grpc.RpcError as e:
            print(failure_line("jackpotd", args.target, e.code().name, e.details()), file=sys.stderr)
            return 1
