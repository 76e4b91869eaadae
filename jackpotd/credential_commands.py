"""`jackpotd revoke`: put a token or a certificate on the revocation list every worker reads (store/ledger/
revocations.py), or list it. The act and its reason go to the audit trail with the host's account."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import jwt
from cryptography import x509

from .auth.guard import identity_of_certificate
from .auth.tokens import token_id
from .domain.ids import visible
from .ledger_commands import operator
from .store import ledger
from .store.ledger.revocations import revocations, revoke
from .stores import Stores

_VALUE = re.compile(r"[0-9A-Za-z._-]{1,128}")


def credential_of(args: argparse.Namespace) -> tuple[str, str]:
    """("jti:<id>" or "serial:<hex>", its holder when the credential itself is given); ValueError when unusable."""
    if args.token_file:
        token = Path(args.token_file).read_text().strip()
        claims = jwt.decode(token, options={"verify_signature": False})
        return f"jti:{token_id(token)}", f"{claims.get('role', '')}:{claims.get('sub', '')}"
    if args.cert:
        pem = Path(args.cert).read_bytes()
        cert = x509.load_pem_x509_certificate(pem)
        identity = identity_of_certificate(pem)
        return f"serial:{cert.serial_number:x}", identity.key if identity is not None else ""
    if args.jti:
        if not _VALUE.fullmatch(args.jti):
            raise ValueError(f"{args.jti[:80]!r} is not a token id")
        return f"jti:{args.jti}", ""
    try:  # as the guard writes it: lower-case hex without leading zeros, whatever the spelling given
        serial = int(args.serial.strip().lower().removeprefix("0x").replace(":", ""), 16)
    except ValueError:
        raise ValueError(f"{args.serial[:80]!r} is not a serial number (hex)") from None
    return f"serial:{serial:x}", ""


async def run(stores: Stores, args: argparse.Namespace) -> int:
    if args.list:
        found = await revocations(stores.pg)
        for r in found:
            print(visible(f"{r.revoked_at:%Y-%m-%d %H:%M:%S %Z}  {r.credential}  {r.holder or '-'}  by "
                          f"{r.revoked_by}: {r.reason}"))
        if not found:
            print("no credential is revoked")
        return 0
    if not args.reason or not args.reason.strip():
        print("jackpotd: --reason is required: say why the credential is revoked", file=sys.stderr)
        return 2
    try:
        credential, holder = credential_of(args)
    except (OSError, ValueError, jwt.InvalidTokenError) as e:
        print(f"jackpotd: {e}", file=sys.stderr)
        return 2
    actor = operator()
    new = await revoke(stores.pg, credential, holder, args.reason, actor)
    await ledger.record_admin_act(stores.pg, {"actor": actor.removeprefix("operator:"), "role": "operator",
                                              "method": "Revoke", "reason": args.reason, "outcome": "OK",
                                              "detail": f"{credential} ({holder or 'holder unknown'})"})
    print(visible(f"{credential} ({holder or 'holder unknown'}) {'revoked' if new else 'was revoked already'} as "
                  f"{actor}: every worker refuses it within a few seconds and ends its open streams"))
    return 0
