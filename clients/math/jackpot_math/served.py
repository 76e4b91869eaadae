"""A running link read from jackpotd for its certificate: ReportService/GetMath on a channel presenting a finance
(else admin) credential, as jackpot-report connects; the config's hash checked against the bytes served."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import grpc

from jackpotd.api.gen.jackpot.v1 import report_pb2, report_pb2_grpc
from jackpotd.auth.identity import Role
from jackpotd.domain.errors import DomainError
from jackpotd.domain.link import LinkConfig
from jackpotd.odds.config_digest import config_json

if TYPE_CHECKING:
    from jackpotd.api.gen.jackpot.v1.report_pb2_grpc import ReportServiceAsyncStub

ROLES = (Role.FINANCE, Role.ADMIN)  # GetMath is read as the other reports are: finance first
UNREACHABLE = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED})


class Unreachable(Exception):
    """jackpotd did not answer at the address (jackpot-math exits 1, naming it)."""


class Refused(Exception):
    """jackpotd answered with an error (an unknown link, a credential it refuses): jackpot-math exits 2."""


@dataclass(frozen=True, slots=True)
class ServedLink:
    """A running link as GetMath served it: its config, every pool's balance (µ¢) and the certificate's source."""

    config: LinkConfig
    balances_uc: Mapping[str, int]
    source: Mapping[str, str]
    inputs: report_pb2.MathInputs


async def fetch_math(stub: ReportServiceAsyncStub, link_id: str,
                     timeout: float | None = None) -> report_pb2.MathInputs:
    """GetMath for `link_id`."""
    return await stub.GetMath(report_pb2.GetMathRequest(link_id=link_id), timeout=timeout)


def served_link(inputs: report_pb2.MathInputs, target: str) -> ServedLink:
    """The link of a GetMath answer; Refused when the served JSON is not its hash's, or not a config."""
    digest = hashlib.sha256(inputs.config_json.encode()).hexdigest()
    if digest != inputs.config_sha256:
        raise Refused(f"link {inputs.link_id}: the config served hashes to {digest}, not to the config_sha256 "
                      f"served ({inputs.config_sha256})")
    try:
        config = LinkConfig.from_dict(json.loads(inputs.config_json))
    except (ValueError, KeyError, TypeError, DomainError) as e:
        raise Refused(f"link {inputs.link_id}: the config served is not a link's config: {e}") from None
    if config_json(config) != inputs.config_json:  # the same bytes this tool will hash in the certificate
        raise Refused(f"link {inputs.link_id}: the config served is not in its canonical form")
    source = {"kind": "jackpotd", "link_id": inputs.link_id, "config_version": str(inputs.config_version),
              "target": target, "sequence": str(inputs.sequence), "at_ms": str(inputs.at_ms),
              "config_sha256": inputs.config_sha256}
    return ServedLink(config, {b.pool: b.ucents for b in inputs.balances}, source, inputs)


async def read_link(channel_factory: Callable[[str], grpc.aio.Channel], target: str, link_id: str,
                    timeout: float) -> ServedLink:
    """GetMath on a channel to `target` (opened here, on the running loop) as a ServedLink; Unreachable when
    jackpotd does not answer, Refused when it refuses."""
    channel = channel_factory(target)
    try:
        inputs = await fetch_math(report_pb2_grpc.ReportServiceStub(channel), link_id, timeout)
    except grpc.aio.AioRpcError as e:
        if e.code() in UNREACHABLE:
            raise Unreachable(f"cannot reach jackpotd at {target}: {e.code().name}: {e.details()}") from None
        raise Refused(f"{e.code().name}: {e.details()}") from None
    finally:
        await channel.close(grace=None)
    return served_link(inputs, target)
