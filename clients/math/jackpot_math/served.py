"""A running link read from jackpotd for its certificate: ReportService/GetMath on a channel presenting a finance
(else admin) credential, as jackpot-report connects; the config's hash checked against the bytes served."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

import grpc

from jackpotd.api.gen.jackpot.v1 import report_pb2, report_pb2_grpc
from jackpotd.auth.identity import Role
from jackpotd.domain.errors import DomainError
from jackpotd.domain.link import LinkConfig
from jackpotd.odds.config_digest import config_json
from jackpotd.service.math_inputs import game_figures

if TYPE_CHECKING:
    from jackpotd.api.gen.jackpot.v1.report_pb2_grpc import ReportServiceAsyncStub

ROLES = (Role.FINANCE, Role.ADMIN)  # GetMath is read as the other reports are: finance first


class CallFailed(Exception):
    """GetMath failed: jackpotd unreachable at `target`, or it refused (an unknown link, a credential it refuses);
    jackpot-math exits 1 with jackpotd.target's one line."""

    def __init__(self, target: str, code: str, details: str) -> None:
        super().__init__(f"{code}: {details}")
        self.target, self.code, self.details = target, code, details


class Refused(Exception):
    """What jackpotd served cannot be certified (its config does not hash as it says): jackpot-math exits 2."""


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
    balances = {b.pool: b.ucents for b in inputs.balances}
    source = {"kind": "jackpotd", "link_id": inputs.link_id, "config_version": str(inputs.config_version),
              "target": target, "sequence": str(inputs.sequence), "at_ms": str(inputs.at_ms),
              "config_sha256": inputs.config_sha256, "server_figures": server_figures(inputs, config, balances)}
    return ServedLink(config, balances, source, inputs)


def server_figures(inputs: report_pb2.MathInputs, config: LinkConfig, balances_uc: Mapping[str, int]) -> str:
    """Whether jackpotd's own exact figures (GetMath's games) are this tool's for the same config and balances:
    "agree", or "differ: ..." naming the first game and figure that does not (a server of another version)."""
    mine = {g.game: g for g in game_figures(config, balances_uc)}
    if sorted(mine) != sorted(g.game for g in inputs.games):
        return f"differ: games served {sorted(g.game for g in inputs.games)}, computed {sorted(mine)}"
    for g in inputs.games:
        m = mine[g.game]
        served = (tuple((x.hand, x.count, x.total) for x in g.hands),
                  Fraction(int(g.expected_ucents_numerator), int(g.expected_ucents_denominator)), g.rtp_ppm,
                  g.break_even_pool, g.break_even_cents if g.HasField("break_even_cents") else None)
        computed = (m.hands, m.expected_uc, m.rtp_ppm, m.break_even_pool, m.break_even_cents)
        for name, a, b in zip(("hands", "expected_uc", "rtp_ppm", "break_even_pool", "break_even_cents"),
                              served, computed, strict=True):
            if a != b:
                return f"differ: {g.game} {name}: served {a}, computed {b}"
    return "agree"


async def read_link(channel_factory: Callable[[str], grpc.aio.Channel], target: str, link_id: str,
                    timeout: float) -> ServedLink:
    """GetMath on a channel to `target` (opened here, on the running loop) as a ServedLink; CallFailed when
    jackpotd does not answer or refuses."""
    channel = channel_factory(target)
    try:
        inputs = await fetch_math(report_pb2_grpc.ReportServiceStub(channel), link_id, timeout)
    except grpc.aio.AioRpcError as e:
        raise CallFailed(target, e.code().name, e.details() or "") from None
    finally:
        await channel.close(grace=None)
    return served_link(inputs, target)
