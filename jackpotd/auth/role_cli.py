"""What the role clients' command lines share (jackpot-report, jackpot-floor): parse, find the role's credential
from the flags, then run the command with channels presenting it. Exit 2 for usage and credentials, 130 when
interrupted; the command's own code otherwise."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

import grpc

from .client import role_channel
from .credentials import CredentialsMissing, credential_flags, role_credential
from .identity import Role

ChannelFactory = Callable[[str], grpc.aio.Channel]  # a target ("host:port") to a channel presenting the credential


def role_main(prog: str, argv: list[str] | None, parse: Callable[[list[str] | None], argparse.Namespace],
              roles: Sequence[Role], minted_name: str,
              run: Callable[[argparse.Namespace, ChannelFactory], Coroutine[Any, Any, int]]) -> int:
    """Parse `argv` (a ValueError from `parse` is a usage error), find the first of `roles`' credentials (a token
    minted from a development key is named `minted_name`; several of the role and none chosen is exit 2, listing
    them), and run, `args.acting_as` naming whom the credential names."""
    try:
        args = parse(argv)
    except SystemExit as e:  # argparse: --help (0) or its own usage error (2, message printed)
        return e.code if isinstance(e.code, int) else 2
    except ValueError as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 2
    try:
        credential = role_credential(credential_flags(args), roles, minted_name)
    except CredentialsMissing as e:
        print(f"{prog}: no {roles[0].value} credential: {e}", file=sys.stderr)
        return 2
    except ValueError as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 2
    args.acting_as = credential.who  # whom the credential names: every act says as whom it was done
    try:
        return asyncio.run(run(args, lambda target: role_channel(credential, target)))
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
