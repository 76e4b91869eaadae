"""`jackpot-floor` against a real jackpotd (issue 21): a supervisor sees a pending hit, approves it and sees none
pending; reads the tables, suspends and resumes one; reads the audit trail with their own name on every act;
every command's --json parses; a refusal is one line and exit 1, never a traceback."""

from __future__ import annotations

import json
from typing import Any

import grpc
import pytest
from jackpot_floor import cli
from jackpot_floor.calls import FloorCalls, FloorError, floor_channel
from jackpot_floor.render import money

from jackpotd.auth.credentials import RoleCredential
from jackpotd.auth.identity import Role

from .harness import Client, token
from .test_hit_approval import ROYAL, pending_royal

SUPERVISOR = RoleCredential(token=token(Role.SUPERVISOR, "alice"))


def channel(target: str) -> grpc.aio.Channel:
    return floor_channel(SUPERVISOR, target)


async def floor(capsys: pytest.CaptureFixture[str], target: str, *argv: str) -> tuple[int, str, str]:
    """Run `jackpot-floor ARGV` in-process as supervisor:alice (whom `role_main` finds the credential names): its
    exit status, standard output and error."""
    capsys.readouterr()
    args = cli.parse([*argv, "--target", target])
    args.acting_as = "supervisor:alice"
    code = await cli.run(args, channel)
    out, err = capsys.readouterr()
    return code, out, err


async def floor_json(capsys: pytest.CaptureFixture[str], target: str, *argv: str) -> Any:
    code, out, err = await floor(capsys, target, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


async def test_a_supervisor_approves_suspends_resumes_and_reads_the_trail(
        client: Client, target: str, capsys: pytest.CaptureFixture[str]) -> None:
    link, table, payout = await pending_royal(client)

    # the pending royal, as a person reads it and as a script does
    code, out, err = await floor(capsys, target, "hits", "--link", link)
    assert code == 0, err
    assert "Royal flush" in out and "A♠ K♠ Q♠ J♠ 10♠" in out and "0 of 1" in out, out
    [pending] = await floor_json(capsys, target, "hits", "--link", link)
    assert (pending["hit_id"], pending["status"], pending["seat"], pending["amount_cents"]) == (
        payout.hit_id, "PENDING", 1, payout.amount_cents)
    assert pending["cards"] == ["As", "Ks", "Qs", "Js", "Ts"]

    code, out, err = await floor(capsys, target, "approve", payout.hit_id, "--ref", "SURV-7", "--reason", "reviewed")
    assert code == 0, err
    assert out.startswith(f"approved hit {payout.hit_id} as supervisor:alice: PAID {money(payout.amount_cents)} "
                          "Royal flush"), out
    assert await floor_json(capsys, target, "hits", "--link", link) == []
    code, out, _ = await floor(capsys, target, "hits", "--link", link)
    assert out == f"no pending hits on link {link}\n"
    assert [h["status"] for h in await floor_json(capsys, target, "hits", "--link", link, "--all")] == ["PAID",
                                                                                                        "PAID"]

    # a second approval of the same hit: refused by jackpotd, one line, exit 1
    code, out, err = await floor(capsys, target, "approve", payout.hit_id, "--ref", "SURV-7")
    assert (code, out) == (1, "")
    assert err.startswith("jackpot-floor: FAILED_PRECONDITION: ") and err.count("\n") == 1, err

    # another royal, rejected: nothing paid, its amount back in MAJOR
    await client.commit(table, "r2", [3])
    [royal] = (await client.settle(table, "r2", {3: ROYAL})).payouts
    assert royal.status == "PENDING"
    code, out, err = await floor(capsys, target, "reject", royal.hit_id, "--ref", "SURV-8", "--reason",
                                 "cards disturbed before verification", "--link", link)
    assert code == 0, err
    assert out.startswith(f"rejected hit {royal.hit_id} as supervisor:alice: REJECTED {money(royal.amount_cents)} "
                          "Royal flush from MAJOR"), out
    assert [h["hit_id"] for h in await floor_json(capsys, target, "hits", "--link", link, "--status", "rejected",
                                                  "--table", table)] == [royal.hit_id]

    # tables: suspend, see it, resume
    [row] = await floor_json(capsys, target, "tables", "--link", link)
    assert (row["table_id"], row["suspended"]) == (table, False)
    code, out, err = await floor(capsys, target, "suspend", table, "--reason", "shuffler fault", "--link", link)
    assert code == 0 and out.startswith(f"table {table} suspended as supervisor:alice"), err
    [row] = await floor_json(capsys, target, "tables", "--link", link)
    assert row["suspended"] is True
    code, out, err = await floor(capsys, target, "tables", "--link", link)
    assert "SUSPENDED" in out, out
    code, _, err = await floor(capsys, target, "resume", table, "--reason", "shuffler replaced", "--ref", "INSP-88")
    assert code == 0, err
    [row] = await floor_json(capsys, target, "tables", "--link", link)
    assert row["suspended"] is False

    # the trail: every act of hers on this link, newest first, with her name
    acts = await floor_json(capsys, target, "audit", "--link", link, "--limit", "10")
    mine = [(a["method"], a["outcome"], a["who"]) for a in acts if a["actor"] == "alice"]
    assert mine == [("ResumeTable", "OK", "supervisor:alice"), ("SuspendTable", "OK", "supervisor:alice"),
                    ("RejectHit", "OK", "supervisor:alice"), ("ApproveHit", "FAILED_PRECONDITION", "supervisor:alice"),
                    ("ApproveHit", "OK", "supervisor:alice")], acts
    # her looks at the hits are on the trail too, listed when asked for
    with_reads = await floor_json(capsys, target, "audit", "--link", link, "--reads")
    assert "ListHits" in {a["method"] for a in with_reads}
    code, out, _ = await floor(capsys, target, "audit", "--link", link)
    assert "supervisor:alice" in out and "INSP-88" in out and "shuffler fault" in out, out

    pools = await floor_json(capsys, target, "pools", "--link", link)
    assert {p["pool"] for p in pools} >= {"MAJOR", "MINOR"}


async def test_calls_raise_floor_error_naming_the_status(target: str) -> None:
    async with floor_channel(SUPERVISOR, target) as ch:
        with pytest.raises(FloorError) as e:
            await FloorCalls(ch).reject("no-such-link:t:r:1", "a reason", approval_ref="SURV-1")
    assert e.value.code in ("NOT_FOUND", "FAILED_PRECONDITION"), e.value
    assert "no-such-link" in e.value.message or "hit" in e.value.message, e.value.message


async def test_a_reason_with_a_line_break_and_an_escape_code_is_one_row_of_the_trail(
        client: Client, target: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 32: a reject reason holding "\\n", a forged row and an ESC sequence is shown on one row of
    `jackpot-floor audit`, drawn (\\n, \\x1b), never raw; --json keeps it exact, escaped."""
    link, _, payout = await pending_royal(client)
    reason = "cards disturbed\n2026-01-01 00:00:00Z  supervisor:mallory  ApproveHit  -  ok  SURV-0  OK\x1b[2J\x9b1m"
    code, out, err = await floor(capsys, target, "reject", payout.hit_id, "--ref", "SURV-9\r\x1b]0;x\x07",
                                 "--reason", reason, "--link", link)
    assert code == 0, err
    assert out.count("\n") == 1 and "\x1b" not in out and "\x9b" not in out, out
    code, out, err = await floor(capsys, target, "audit", "--link", link)
    assert code == 0, err
    _header, *rows = out.splitlines()
    [rejected] = [r for r in rows if "RejectHit" in r]
    assert len(rows) == len(await floor_json(capsys, target, "audit", "--link", link)), out
    assert "cards disturbed\\n2026-01-01" in rejected and "\\x1b[2J\\u009b1m" in rejected, rejected
    assert "SURV-9\\r\\x1b]0;x\\x07" in rejected, rejected
    assert not any(c in out for c in "\x1b\x9b\x07\r") and "mallory" not in out.replace(rejected, "")
    code, raw, err = await floor(capsys, target, "audit", "--link", link, "--json")
    assert code == 0, err
    assert not any(c in raw for c in "\x1b\x9b\x07\r"), raw
    [row] = [a for a in json.loads(raw) if a["method"] == "RejectHit"]
    assert (row["reason"], row["approval_ref"]) == (reason, "SURV-9\r\x1b]0;x\x07")
