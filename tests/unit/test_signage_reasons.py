"""What a sign's public page says while its link is not live: short human texts and a small code, one text per
cause, never the gRPC detail (that is for the sign server's log); and a celebration never longer than 8 s."""

from __future__ import annotations

import grpc
import pytest
from jackpot_signage import reasons
from jackpot_signage.cli import main


def test_a_status_reads_as_a_short_human_text_and_its_code() -> None:
    down = reasons.from_status(grpc.StatusCode.UNAVAILABLE, "failed to connect to all addresses; Connection refused")
    assert (down.code, down.text) == ("UNAVAILABLE", "Reconnecting…")
    assert "refused" in down.detail and "refused" not in down.text
    assert reasons.from_status(grpc.StatusCode.NOT_FOUND, "link_id=x").shown == ("NOT_FOUND",
                                                                                  "This link does not exist")
    assert reasons.from_status(grpc.StatusCode.PERMISSION_DENIED, "role").text == "Out of service"
    assert reasons.from_status(grpc.StatusCode.FAILED_PRECONDITION, "").text == "Link paused"


def test_one_cause_one_text_whatever_the_detail() -> None:
    a = reasons.from_status(grpc.StatusCode.UNAVAILABLE, "one detail")
    b = reasons.from_status(grpc.StatusCode.UNAVAILABLE, "another detail")
    assert a.shown == b.shown and a.detail != b.detail
    assert {r.text for r in (a, reasons.ended(), reasons.silent(6))} == {"Reconnecting…"}
    assert reasons.failed(RuntimeError("boom")).shown == ("ERROR", "Out of service")


def test_a_celebration_longer_than_8_s_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--link", "a", "--celebrate-seconds", "12"]) == 2
    assert "--celebrate-seconds 12: from 0 to 8" in capsys.readouterr().err
