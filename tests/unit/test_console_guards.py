"""The console's pure guards and users file: sessions expire when idle (a page refreshing itself is not
activity), CSRF tokens match exactly, the sixth failed login in a minute is refused per name and per address,
the users file holds argon2id hashes, mode 0600, written whole, and is read again only when it changed (a removed
person's session ends at their next request), and a refresh of the pending hits reads jackpotd only when needed."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from jackpot_console import users, words
from jackpot_console.cli import main
from jackpot_console.guards import LoginLimiter, Sessions, csrf_ok, limit_keys
from jackpot_console.live import CACHE_SECONDS, CachedPart, use_cache


def test_a_session_lives_while_used_and_expires_when_idle() -> None:
    sessions = Sessions(idle_seconds=60)
    s = sessions.open(0.0, user="alice")
    assert sessions.find(s.sid, 50.0) == (s, False)
    assert sessions.find(s.sid, 100.0) == (s, False)  # 50 s after the last request: alive
    assert sessions.find(s.sid, 150.0, touch=False) == (s, False)  # a page refreshing itself does not touch it
    assert sessions.find(s.sid, 161.0) == (None, True)  # 61 s idle: expired, and the page says so once
    assert sessions.find(s.sid, 162.0) == (None, False)
    assert sessions.find("not-a-session", 0.0) == (None, False) and sessions.find(None, 0.0) == (None, False)


def test_a_login_form_lives_longer_than_a_short_session_and_is_not_called_an_expired_login() -> None:
    sessions = Sessions(idle_seconds=1, form_seconds=10)
    s = sessions.open(0.0)
    assert sessions.find(s.sid, 5.0, touch=False) == (s, False)  # a form filled in slowly still posts
    assert sessions.find(s.sid, 11.0) == (None, False)


def test_sessions_are_bounded_and_swept() -> None:
    sessions = Sessions(idle_seconds=10, limit=3, form_seconds=10)
    first, *rest = [sessions.open(float(t)) for t in range(4)]
    assert len(sessions) == 3 and sessions.find(first.sid, 4.0) == (None, False)
    assert sessions.sweep(12.5) == 2 and len(sessions) == 1  # opened at 1 and 2: idle over 10 s
    assert sessions.find(rest[-1].sid, 12.5)[0] is rest[-1]


def test_sessions_have_fresh_unguessable_ids_and_tokens() -> None:
    sessions = Sessions(60)
    a, b = sessions.open(0.0, "alice"), sessions.open(0.0, "alice")
    assert len({a.sid, b.sid, a.csrf, b.csrf}) == 4 and all(len(t) >= 40 for t in (a.sid, a.csrf))


def test_csrf_tokens_match_exactly() -> None:
    assert csrf_ok("abc", "abc")
    for sent in (None, "", "abd", "ab", "abcd", "ABC"):
        assert not csrf_ok("abc", sent), sent
    assert not csrf_ok("", "")


def test_the_sixth_failed_login_in_a_minute_is_refused() -> None:
    limiter = LoginLimiter()
    keys = limit_keys("alice", "10.0.0.1")
    for t in range(5):
        assert limiter.wait(keys, float(t)) == 0
        limiter.failed(keys, float(t))
    assert limiter.wait(keys, 5.0) == pytest.approx(55.0)  # the first failure leaves the window at 60 s
    assert limiter.wait(keys, 59.9) > 0 and limiter.wait(keys, 60.0) == 0


def test_failures_count_per_name_and_per_address() -> None:
    limiter = LoginLimiter()
    for i in range(5):  # five names from one address
        limiter.failed(limit_keys(f"user{i}", "10.0.0.1"), 0.0)
    assert limiter.wait(limit_keys("bob", "10.0.0.1"), 1.0) > 0  # the address is at its limit
    assert limiter.wait(limit_keys("bob", "10.0.0.2"), 1.0) == 0
    for i in range(5):  # one name from five addresses
        limiter.failed(limit_keys("carol", f"10.0.1.{i}"), 0.0)
    assert limiter.wait(limit_keys("Carol", "10.0.2.1"), 1.0) > 0  # names count case-insensitively


def test_the_limiter_forgets_the_oldest_keys_beyond_its_bound() -> None:
    limiter = LoginLimiter(max_keys=4)
    for i in range(10):
        limiter.failed([f"k{i}"], 0.0)
    assert limiter.wait(["k9"], 0.0) == 0 and len(limiter._failures) == 4


def test_the_users_file_holds_argon2id_hashes_mode_0600(tmp_path: Path) -> None:
    path = tmp_path / "console" / "users.json"
    users.add(path, "alice", "correct horse")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    known = users.load(path)
    assert known["alice"].hash.startswith("$argon2id$") and "correct horse" not in path.read_text()
    assert users.verify(known, "alice", "correct horse")
    assert not users.verify(known, "alice", "wrong horse!") and not users.verify(known, "bob", "correct horse")
    users.add(path, "alice", "battery staple", replace=True)
    assert users.verify(users.load(path), "alice", "battery staple")
    assert [p.name for p in path.parent.iterdir()] == ["users.json"]  # no temporary file left behind
    users.remove(path, "alice")
    assert users.load(path) == {}


@pytest.mark.parametrize(("name", "password", "why"), [
    ("al ice", "correct horse", "name"), ("", "correct horse", "name"), ("a" * 65, "correct horse", "name"),
    ("alice", "short", "at least 8"),
])
def test_the_users_file_refuses_bad_names_and_short_passwords(tmp_path: Path, name: str, password: str,
                                                              why: str) -> None:
    with pytest.raises(users.UsersFileError, match=why):
        users.add(tmp_path / "users.json", name, password)
    assert not (tmp_path / "users.json").exists()


def test_the_users_file_refuses_a_second_add_and_unknown_names(tmp_path: Path) -> None:
    path = tmp_path / "users.json"
    users.add(path, "alice", "correct horse")
    with pytest.raises(users.UsersFileError, match="already a user"):
        users.add(path, "alice", "correct horse")
    with pytest.raises(users.UsersFileError, match="no such user"):
        users.add(path, "bob", "correct horse", replace=True)
    with pytest.raises(users.UsersFileError, match="no such user"):
        users.remove(path, "bob")
    path.write_text('{"version": 2, "users": {}}')
    with pytest.raises(users.UsersFileError, match="version 1"):
        users.load(path)


def test_the_users_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
                           ) -> None:
    path = str(tmp_path / "users.json")
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO("correct horse\n"))
    assert main(["users", "add", "alice", "--users", path, "--password-stdin"]) == 0
    assert main(["users", "list", "--users", path]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "alice"
    assert main(["users", "remove", "bob", "--users", path]) == 2
    assert "name='bob': no such user" in capsys.readouterr().err


def test_serve_refuses_plain_text_off_loopback(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--host", "0.0.0.0", "--credentials", "/nonexistent"]) == 2
    assert "plain text is allowed on loopback only" in capsys.readouterr().err
    assert main(["serve", "--host", "0.0.0.0", "--cert", "c.pem", "--credentials", "/nonexistent"]) == 2
    assert "--cert and --key go together" in capsys.readouterr().err


def test_words() -> None:
    assert words.dollars(4_521_033) == "$45,210.33" and words.dollars(-5) == "-$0.05" and words.dollars(0) == "$0.00"
    assert words.hand("royal_flush") == "Royal flush" and words.hand("four_of_a_kind") == "Four of a kind"
    assert words.cards(("As", "Th", "2c")) == "A♠ 10♥ 2♣"
    assert words.age(1_000, 13_000) == "12 s" and words.age(0, 5) == "" and words.age(1, 3 * 3600_000) == "2 h 59 min"
    assert words.approvals(("supervisor:alice",), 2) == "1 of 2: supervisor:alice"
    assert words.approvals((), 0) == "0 of 1"
    assert words.refusal("FAILED_PRECONDITION", "x") == "Refused (FAILED_PRECONDITION): x"


def test_a_refresh_shows_the_cached_pending_hits_only_while_nothing_changed_and_it_is_young() -> None:
    cached = CachedPart(generation=7, at=100.0, html="<table>")
    assert use_cache(True, 7, cached, 100.0) and use_cache(True, 7, cached, 100.0 + CACHE_SECONDS - 0.1)
    assert not use_cache(True, 8, cached, 101.0)  # a hit announced (or the watch reconnected) since: read
    assert not use_cache(True, 7, cached, 100.0 + CACHE_SECONDS)  # old: its ages would be wrong
    assert not use_cache(False, 7, cached, 101.0)  # the watch is down: no word of changes, so read
    assert not use_cache(True, 7, None, 101.0)  # nothing cached (a failed read is not cached)
    assert not use_cache(True, 7, cached, 99.0)  # a clock gone backwards: read


def test_the_roster_follows_the_users_file_and_reads_it_only_when_it_changed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "users.json"
    roster = users.Roster(path)
    assert not roster.lists("alice")  # no file yet: no one
    users.add(path, "alice", "correct horse")
    users.add(path, "bob", "battery staple")
    reads = []
    load = users.load
    monkeypatch.setattr(users, "load", lambda p: reads.append(p) or load(p))
    assert roster.lists("alice") and roster.lists("bob") and not roster.lists("carol")
    assert len(reads) == 1  # a stat per check, the file read once
    users.remove(path, "alice")  # (which reads the file itself, once)
    assert not roster.lists("alice") and roster.lists("bob") and len(reads) == 3
    users.add(path, "bob", "another staple", replace=True)  # a new password: the same names
    assert roster.lists("bob") and roster.lists("bob") and len(reads) == 5
    path.write_text("not json")
    assert not roster.lists("bob")  # a file it cannot use lists no one
    path.unlink()
    assert not roster.lists("bob")
