"""A sign started before jackpotd has issued its credentials says so once, plainly, for all its links."""

from __future__ import annotations

import logging
from pathlib import Path

import grpc
import pytest
from jackpot_signage.cli import channel_factory, parser
from jackpot_signage.feed import CredentialsWait, LinkFeed

from ..integration.harness import eventually


async def test_a_sign_waiting_for_its_credentials_says_so_once(tmp_path: Path,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    credentials = tmp_path / "state" / "credentials"  # jackpotd has not issued them yet
    args = parser().parse_args(["--link", "a", "--link", "b", "--credentials", str(credentials)])
    make = channel_factory(args)
    tries = []

    def channel(target: str) -> grpc.aio.Channel:
        tries.append(target)
        return make(target)

    wait = CredentialsWait()
    wait.LONG = 0.0  # a wait that lasts (here from its second try): its detail once, at WARNING
    feeds = [LinkFeed(link, "127.0.0.1:1", channel, wait) for link in args.link]
    caplog.set_level(logging.INFO, "jackpot_signage.feed")
    for feed in feeds:
        feed.start()
    try:
        await eventually(lambda: len(tries) >= 4, 10, "each link tried twice")
    finally:
        for feed in feeds:
            await feed.stop()
    said = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "jackpot_signage.feed"]
    assert said[0] == ("INFO", f"waiting for jackpotd to issue this sign's credentials in {credentials}")
    assert [level for level, _ in said] == ["INFO", "WARNING"], said
    assert "auth.key" in said[1][1]  # the detail: what was looked for, and the flags that name another place
    assert {(feed.reason, feed.state()["code"]) for feed in feeds} == {("Starting up…", "NO_CREDENTIALS")}
