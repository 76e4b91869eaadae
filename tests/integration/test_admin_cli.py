"""`jackpotd fund` and `jackpotd update-link`: an administrator's routine acts without hand-built gRPC calls."""

from __future__ import annotations

import asyncio
import json

import pytest

from jackpotd.cli import main

from ..conftest import unique
from .harness import Client


async def test_fund_adds_to_the_pool_once_per_request_id_and_names_the_actor(
        client: Client, target: str, capsys: pytest.CaptureFixture[str]) -> None:
    link = unique("admincli")
    await client.create_link(link)
    argv = ["fund", "--link", link, "--pool", "MAJOR", "--cents", "50000", "--reason", "top-up", "--ref", "FIN-1",
            "--request-id", "fund-1", "--target", target]
    assert await asyncio.to_thread(main, argv) == 0
    assert await asyncio.to_thread(main, argv) == 0  # the same request id: answered again, applied once
    out = capsys.readouterr().out
    assert "funded MAJOR of " + link + " with $500.00 as admin:jackpotd-cli" in out  # as whom the act was done
    assert (await client.pools(link))["MAJOR"].amount_cents == 50_000
    audit = await client.pg.fetchval("SELECT entry->'audit'->>'actor' FROM entries WHERE link_id = $1 "
                                     "AND kind = 'fund' ORDER BY seq DESC LIMIT 1", link)
    assert audit == "admin:jackpotd-cli"


async def test_a_refused_act_exits_1_naming_the_field(client: Client, target: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    link = unique("admincli")
    await client.create_link(link)
    argv = ["fund", "--link", link, "--pool", "NOPE", "--cents", "100", "--reason", "r", "--ref", "x",
            "--target", target]
    assert await asyncio.to_thread(main, argv) == 1
    err = capsys.readouterr().err
    assert "INVALID_ARGUMENT" in err and "pool" in err


async def test_update_link_turns_dual_control_on_and_refuses_a_threshold_below_verification(
        client: Client, target: str, capsys: pytest.CaptureFixture[str]) -> None:
    link = unique("admincli")
    await client.create_link(link, threshold=500_000)
    base = ["update-link", "--link", link, "--reason", "dual control", "--ref", "REG-7", "--target", target]
    assert await asyncio.to_thread(main, [*base, "--dual-approval-threshold-cents", "400000"]) == 1
    err = capsys.readouterr().err
    assert "INVALID_ARGUMENT" in err and "dual_approval_threshold_cents=400000" in err
    assert await asyncio.to_thread(main, [*base, "--dual-approval-threshold-cents", "1000000"]) == 0
    assert "configuration version 2" in capsys.readouterr().out
    config = await client.pg.fetchval("SELECT entry->'config' FROM entries WHERE link_id = $1 AND kind = "
                                      "'update_link' ORDER BY seq DESC LIMIT 1", link)
    assert json.loads(config)["dual_approval_threshold_cents"] == 1_000_000
