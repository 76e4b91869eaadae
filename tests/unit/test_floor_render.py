"""What `jackpot-floor` prints (issue 21), without jackpotd: dollars and cents, ages, hand names and cards, "1 of 2"
approvals, who acted through a console, the sub-cent note, JSON; flags refused before anything is sent; and the
on-behalf-of metadata as a bare gRPC server receives it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import grpc
import pytest
from jackpot_floor import cli
from jackpot_floor.calls import (
    ON_BEHALF_OF,
    AuditEntry,
    Changed,
    Decision,
    FloorCalls,
    Hit,
    Pool,
    Table,
    is_answered_read,
)
from jackpot_floor.render import (
    age,
    cards_text,
    hand_name,
    money,
    render_audit,
    render_changed,
    render_decision,
    render_hits,
    render_pools,
    render_tables,
    sub_cent,
    to_json,
)

from jackpotd.api.gen.jackpot.v1 import admin_pb2

NOW = 1_800_000_000_000


def hit(**changes: object) -> Hit:
    base: dict[str, object] = dict(
        hit_id="demo:demo-table-2:r41:3", table_id="demo-table-2", round_id="r41", seat=3, hand="royal_flush",
        cards=("As", "Ks", "Qs", "Js", "Ts"), pool="MAJOR", amount_cents=4_521_033, status="PENDING",
        at_ms=NOW - 185_000, approved_by=(), approvals_needed=1, rejected_by="", rule="MAJOR 100%", sequence=9)
    return Hit(**{**base, **changes})  # type: ignore[arg-type]


@pytest.mark.parametrize(("cents", "text"), [(0, "$0.00"), (5, "$0.05"), (4_521_033, "$45,210.33"),
                                             (-123_456_789, "-$1,234,567.89"), (100, "$1.00")])
def test_money_is_dollars_and_cents(cents: int, text: str) -> None:
    assert money(cents) == text


@pytest.mark.parametrize(("ago_ms", "text"), [(0, "0 s"), (59_999, "59 s"), (60_000, "1 min"), (185_000, "3 min"),
                                              (3_600_000, "1 h"), (7_500_000, "2 h 5 min"), (90_000_000, "1 d"),
                                              (-5_000, "0 s")])
def test_ages_are_brief(ago_ms: int, text: str) -> None:
    assert age(NOW, NOW - ago_ms) == text


def test_an_unknown_time_has_no_age() -> None:
    assert age(NOW, 0) == "-"


def test_hands_and_cards_read_as_people_say_them() -> None:
    assert hand_name("royal_flush") == "Royal flush"
    assert hand_name("four_of_a_kind") == "Four of a kind"
    assert cards_text(["As", "Ks", "Qs", "Js", "Ts"]) == "A♠ K♠ Q♠ J♠ 10♠"
    assert cards_text(["2c", "9d", "Th"]) == "2♣ 9♦ 10♥"
    assert cards_text([]) == "-"


def test_sub_cent_shows_only_what_whole_cents_hide() -> None:
    assert sub_cent(104_335_000_000) == ""
    assert sub_cent(104_335_500_000) == "+0.5¢"
    assert sub_cent(1_000_001) == "+0.000001¢"


def test_pending_hits_show_table_seat_hand_cards_amount_age_and_approvals() -> None:
    text = render_hits([hit(approvals_needed=2, approved_by=("supervisor:alice",))], NOW, "demo", True)
    header, row = text.splitlines()
    for column in ("TABLE", "SEAT", "HAND", "CARDS", "AMOUNT", "AGE", "APPROVALS"):
        assert column in header
    for cell in ("demo-table-2", " 3 ", "Royal flush", "A♠ K♠ Q♠ J♠ 10♠", "$45,210.33", "3 min",
                 "1 of 2 (supervisor:alice)"):
        assert cell in row, (cell, row)


def test_no_pending_hits_says_so() -> None:
    assert render_hits([], NOW, "demo", True) == "no pending hits on link demo\n"
    assert render_hits([], NOW, "demo", False) == "no hits on link demo\n"


def test_decisions_read_as_sentences_naming_as_whom() -> None:
    paid = Decision("h", "PAID", 4_521_033, "MAJOR", "royal_flush", ("supervisor:alice", "supervisor:bob"), 2)
    assert render_decision(paid, "supervisor:bob") == (
        "approved hit h as supervisor:bob: PAID $45,210.33 Royal flush from MAJOR, approved by supervisor:alice and "
        "supervisor:bob\n")
    half = Decision("h", "PENDING", 4_521_033, "MAJOR", "royal_flush", ("supervisor:alice",), 2)
    assert render_decision(half, "supervisor:alice") == (
        "approved hit h as supervisor:alice (1 of 2 approvals recorded: supervisor:alice); a second supervisor must "
        "approve: $45,210.33 Royal flush from MAJOR\n")
    rejected = Decision("h", "REJECTED", 100, "MINOR", "flush", (), 1, returned_to_pool_ucents=90_000_000)
    assert render_decision(rejected, "supervisor:bob", "rejected") == (
        "rejected hit h as supervisor:bob: REJECTED $1.00 Flush from MINOR; $0.90 back to MINOR\n")
    assert render_decision(rejected, "", "rejected").startswith("rejected hit h: REJECTED")  # holder unreadable
    changed = render_changed("suspended", "t1", Changed("demo", 7, 3), "supervisor:bob")
    assert changed == "table t1 suspended as supervisor:bob (link demo, ledger entry 7)\n"
    assert json.loads(to_json(half, "supervisor:alice"))["acting_as"] == "supervisor:alice"


def test_tables_show_connection_suspension_and_last_round() -> None:
    text = render_tables([Table("t1", True, False, NOW - 12_000), Table("t2", False, True, 0)], NOW, "demo")
    t1, t2 = text.splitlines()[1:]
    assert "online" in t1 and "open" in t1 and "12 s" in t1
    assert "offline" in t2 and "SUSPENDED" in t2 and "none yet" in t2


def test_pools_footnote_a_sub_cent_balance() -> None:
    text = render_pools([Pool("MAJOR", 104_335, 104_335_500_000), Pool("MINOR", 100, 100_000_000)], "demo")
    assert "$1,043.35" in text and "+0.5¢" in text and "SUB-CENT:" in text
    assert "SUB-CENT" not in render_pools([Pool("MINOR", 100, 100_000_000)], "demo")


def test_the_audit_names_the_console_and_the_person() -> None:
    via = AuditEntry(NOW, "alice", "supervisor", "console:floor-1", "ApproveHit", "t1", "ok", "SURV-1", "OK", "")
    direct = AuditEntry(NOW, "bob", "supervisor", "", "RejectHit", "t1", "void", "SURV-2", "FAILED_PRECONDITION",
                        "the hit was decided already")
    assert via.who == "console:floor-1 for supervisor:alice" and direct.who == "supervisor:bob"
    text = render_audit([via, direct], "demo")
    assert "console:floor-1 for supervisor:alice" in text
    assert "FAILED_PRECONDITION: the hit was decided already" in text
    assert json.loads(to_json([via]))[0]["who"] == "console:floor-1 for supervisor:alice"


def test_answered_reads_are_noise_refused_ones_are_not() -> None:
    assert is_answered_read("ListHits", "OK") and not is_answered_read("ListHits", "PERMISSION_DENIED")
    assert not is_answered_read("ApproveHit", "OK")


def test_json_keeps_exact_fields() -> None:
    [data] = json.loads(to_json([hit()]))
    assert data["amount_cents"] == 4_521_033 and data["cards"] == ["As", "Ks", "Qs", "Js", "Ts"]


@pytest.mark.parametrize("argv", [
    ["approve", "not a hit", "--ref", "S-1"],
    ["approve", "demo:t:r:1", "--ref", "  "],
    ["reject", "demo:t:r:1", "--ref", "S-1", "--reason", " "],
    ["suspend", "bad table!", "--reason", "x"],
    ["hits", "--link", "no spaces"],
    ["hits", "--limit", "0"],
    ["audit", "--limit", "1001"],
    ["approve", "demo:t:r:1"],  # --ref is required (argparse)
])
def test_bad_flags_exit_2_before_anything_is_sent(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([*argv, "--target", "127.0.0.1:1"]) == 2
    err = capsys.readouterr().err
    assert err.strip() and "Traceback" not in err


def test_a_missing_credential_exits_2_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JACKPOTD_AUTH_KEY_FILE", raising=False)
    assert cli.main(["hits", "--credentials", str(tmp_path), "--target", "127.0.0.1:1"]) == 2
    assert capsys.readouterr().err.startswith("jackpot-floor: no supervisor credential: ")


def test_an_unreachable_jackpotd_is_one_line_and_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["pools", "--target", "127.0.0.1:1", "--token-file", "/dev/null", "--timeout", "2"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("jackpot-floor: jackpotd at 127.0.0.1:1 is unreachable (UNAVAILABLE): is it running? "), err
    assert err.count("\n") == 1, err


async def test_on_behalf_of_travels_as_metadata() -> None:
    """The console names its person in `x-jackpot-on-behalf-of`; a direct caller sends no such key."""
    seen: list[dict[str, str]] = []

    async def list_hits(request: admin_pb2.ListHitsRequest, context: grpc.aio.ServicerContext[Any, Any],
                        ) -> admin_pb2.ListHitsResponse:
        seen.append({k: v for k, v in context.invocation_metadata() or () if isinstance(v, str)})
        return admin_pb2.ListHitsResponse(hits=[admin_pb2.HitRow(hit_id="l:t:r:1", status="PENDING")])

    server = grpc.aio.server()
    handler = grpc.method_handlers_generic_handler("jackpot.v1.AdminService", {
        "ListHits": grpc.unary_unary_rpc_method_handler(
            list_hits, request_deserializer=admin_pb2.ListHitsRequest.FromString,
            response_serializer=admin_pb2.ListHitsResponse.SerializeToString)})
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            calls = FloorCalls(channel)
            [h] = await calls.pending_hits("l", on_behalf_of="supervisor:alice")
            await calls.pending_hits("l")
    finally:
        await server.stop(None)
    assert h.approvals_needed == 1  # a server that does not say needs one approval
    assert seen[0].get(ON_BEHALF_OF) == "supervisor:alice" and ON_BEHALF_OF not in seen[1]
    assert ON_BEHALF_OF == "x-jackpot-on-behalf-of"
