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


async def test_update_link_to_a_wager_that_returns_more_than_it_takes_needs_an_approved_override(
        client: Client, target: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 33 from the command line: a 1¢ wager on the default stud paytable returns far over 100% at reset, so
    it is refused naming the return; --rtp-override-ref accepts it and the audit trail records the reference."""
    link = unique("admincli")
    await client.create_link(link)
    base = ["update-link", "--link", link, "--wager-cents", "1", "--reason", "promotion", "--ref", "REG-8",
            "--target", target]
    assert await asyncio.to_thread(main, base) == 1
    err = capsys.readouterr().err
    assert "INVALID_ARGUMENT" in err and "returns" in err and "rtp_override" in err, err
    assert (await client.pg.fetchval("SELECT count(*) FROM entries WHERE link_id = $1 AND kind = 'update_link'",
                                     link)) == 0
    assert await asyncio.to_thread(main, [*base, "--rtp-override-ref", "PROMO-APPROVAL-3"]) == 0
    assert "configuration version 2" in capsys.readouterr().out
    audit = await client.pg.fetchval("SELECT entry->'audit' FROM entries WHERE link_id = $1 AND kind = 'update_link' "
                                     "ORDER BY seq DESC LIMIT 1", link)
    assert json.loads(audit)["rtp_override"] == {"approval_ref": "PROMO-APPROVAL-3", "reason": "promotion"}
