"""ReportService/GetMath and `jackpot-math certify --link` on the real server (issue 24): a link created from the
split example's TOML through CreateLink is served back as the very config (same canonical bytes, same hash) the
tool makes of the file, with its version and the ledger's balances; refusals name the field; the tool certifies
the running link end to end, and names the address it cannot reach."""

from __future__ import annotations

import asyncio
import hashlib
import json
import tomllib
from fractions import Fraction
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf.json_format import ParseDict
from jackpot_math import cli
from jackpot_math.link_toml import link_of

from jackpotd.api.gen.jackpot.v1 import admin_pb2, report_pb2
from jackpotd.auth.identity import Role
from jackpotd.embedded import free_port
from jackpotd.odds.config_digest import config_json, config_sha256
from jackpotd.odds.returns import break_even, return_at

from ..conftest import unique
from .harness import AUDIT, Client, rid, token

EXAMPLES = Path(__file__).resolve().parents[2] / "clients" / "math" / "examples"
UC = 1_000_000


async def _split_link(c: Client) -> tuple[str, dict[str, Any], int]:
    """The split example created and played a little: its link id, the file's document as created (the link id,
    audit and table the test gave it) and the config version the table's registration made."""
    with (EXAMPLES / "split.toml").open("rb") as f:
        doc = tomllib.load(f)
    link, table = unique("math"), unique("mt")
    doc.update(link_id=link, audit={"actor": AUDIT.actor, "reason": AUDIT.reason,
                                    "approval_ref": AUDIT.approval_ref},
               tables=[{"table_id": table, "game": "caribbean-stud", "seats": 7}])
    fields = {k: v for k, v in doc.items() if k not in ("play", "balances", "tables")}
    await c.admin.CreateLink(ParseDict({**fields, "request_id": rid()}, admin_pb2.CreateLinkRequest()))
    registered = await c.admin.RegisterTable(admin_pb2.RegisterTableRequest(
        request_id=rid(), table_id=table, link_id=link, game="caribbean-stud", seats=7, audit=AUDIT))
    await c.fund(link, "MAJOR", 1_000_000)
    await c.commit(table, "r1", [1, 2, 3])
    await c.settle(table, "r1", {2: ["2c", "5c", "9c", "Jc", "Kc"]})  # a flush: MINOR pays $100, short, resets
    return link, doc, registered.config_version


async def test_get_math_serves_the_files_config_its_hash_version_and_balances(client: Client) -> None:
    c = client
    link, doc, version = await _split_link(c)
    served = await c.report.GetMath(report_pb2.GetMathRequest(link_id=link))
    config, _, _ = link_of(doc)  # the file, read by jackpot-math's codec
    assert served.link_id == link
    assert served.config_json == config_json(config)  # CreateLink and the codec make one config, byte for byte
    assert served.config_sha256 == config_sha256(config) == hashlib.sha256(served.config_json.encode()).hexdigest()
    assert served.config_version == version > 0
    ledger = await c.ledger_pools(link)
    assert [(b.pool, b.ucents) for b in served.balances] == [
        (p, ledger.get(f"pool:{p}", 0)) for p in ("MAJOR", "MINOR", "RESERVE")]
    assert served.balances[0].ucents >= 1_000_000 * UC  # funded, plus three wagers' contributions
    assert served.sequence >= version and served.at_ms > 0
    # the exact figures at these balances: jackpotd.odds's, as the tool computes them from the file
    balances = {b.pool: b.ucents for b in served.balances}
    [game] = served.games
    assert game.game == "caribbean-stud"
    counts = {x.hand: (x.count, x.total) for x in game.hands}
    assert counts["royal_flush"] == (4, 2_598_960) and counts["flush"] == (5_108, 2_598_960)
    exact = return_at(config, "caribbean-stud", balances)
    expected = Fraction(int(game.expected_ucents_numerator), int(game.expected_ucents_denominator))
    assert expected == exact.expected_uc
    assert game.rtp_ppm == exact.rtp.numerator * 1_000_000 // exact.rtp.denominator
    even = break_even(config, "caribbean-stud", balances)
    assert (game.break_even_pool, game.HasField("break_even_cents")) == ("MAJOR", even.balance_cents is not None)
    assert game.break_even_cents == (even.balance_cents or 0)


@pytest.mark.parametrize(("link_id", "code"), [("", grpc.StatusCode.INVALID_ARGUMENT),
                                               ("nolink-math", grpc.StatusCode.NOT_FOUND)])
async def test_get_math_names_a_bad_or_unknown_link(client: Client, link_id: str, code: grpc.StatusCode) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as e:
        await client.report.GetMath(report_pb2.GetMathRequest(link_id=link_id))
    assert e.value.code() == code and f"link_id={link_id!r}" in (e.value.details() or "")


async def test_get_math_is_finance_and_admin_not_a_table(client: Client, target: str) -> None:
    link, _, _ = await _split_link(client)
    async with grpc.aio.insecure_channel(target) as channel:
        call = channel.unary_unary("/jackpot.v1.ReportService/GetMath",
                                   request_serializer=report_pb2.GetMathRequest.SerializeToString,
                                   response_deserializer=report_pb2.MathInputs.FromString)
        request = report_pb2.GetMathRequest(link_id=link)
        ok = await call(request, metadata=(("authorization", f"Bearer {token(Role.FINANCE, 'office')}"),))
        assert ok.link_id == link
        for role in (Role.TABLE, Role.DISPLAY, Role.SUPERVISOR):
            with pytest.raises(grpc.aio.AioRpcError) as e:
                await call(request, metadata=(("authorization", f"Bearer {token(role, 'x-1')}"),))
            assert e.value.code() == grpc.StatusCode.PERMISSION_DENIED, role


async def test_certify_a_running_link_end_to_end(client: Client, target: str, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    link, doc, version = await _split_link(client)
    token_file = tmp_path / "finance.token"
    token_file.write_text(token(Role.FINANCE, "office"))
    out = tmp_path / "cert"
    argv = ["certify", "--link", link, "--target", target, "--token-file", str(token_file), "--out", str(out),
            "--days", "2", "--paths", "2", "--tables", "2"]
    # main runs its own event loop (asyncio.run): off this test's loop, in a thread
    code = await _in_thread(cli.main, argv)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    certificate = json.loads((out / "certificate.json").read_text())
    config, _, _ = link_of(doc)
    assert certificate["config_sha256"] == config_sha256(config)
    assert certificate["source"]["kind"] == "jackpotd" and certificate["source"]["link_id"] == link
    assert certificate["source"]["config_version"] == str(version)
    assert certificate["source"]["server_figures"] == "agree"  # jackpotd's exact figures are the tool's
    html = (out / "certificate.html").read_text()
    assert config_sha256(config) in html and "<svg" in html
    assert "written:" in captured.out


async def test_an_unreachable_jackpotd_exits_1_naming_its_address(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    token_file = tmp_path / "finance.token"
    token_file.write_text(token(Role.FINANCE, "office"))
    nowhere = f"127.0.0.1:{free_port()}"
    code = await _in_thread(cli.main, ["certify", "--link", "demo", "--target", nowhere, "--token-file",
                                       str(token_file), "--timeout", "5", "--out", str(tmp_path / "x")])
    assert code == 1
    err = capsys.readouterr().err
    assert err == f"jackpot-math: jackpotd at {nowhere} is unreachable (UNAVAILABLE): is it running? start it with " \
                  "`make run`, or set --target/JACKPOTD_TARGET\n", err
    assert not (tmp_path / "x").exists()


async def _in_thread(main: Any, argv: list[str]) -> int:
    """`main(argv)` in a thread: it runs its own event loop (asyncio.run), which this test's loop cannot host."""
    result: int = await asyncio.to_thread(main, argv)
    return result
