"""Settings come from a TOML file, then JACKPOTD_* variables, then flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from jackpotd.settings import load


def test_flags_beat_environment_beat_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "jackpotd.toml"
    config.write_text('listen = "0.0.0.0:1"\nworkers = 3\ngroup-commit-ms = 1.5\nstate_dir = "s"\n')
    monkeypatch.setenv("JACKPOTD_WORKERS", "2")
    monkeypatch.setenv("JACKPOTD_GROUP_COMMIT_MS", "2.5")
    s = load(str(config), listen="127.0.0.1:9", workers=None)
    assert (s.listen, s.workers, s.group_commit_ms, s.state_dir) == ("127.0.0.1:9", 2, 2.5, "s")
    assert s.embedded


def test_one_store_without_the_other_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JACKPOTD_CONFIG", raising=False)
    with pytest.raises(SystemExit, match="--postgres-dsn"):
        load(None, redis_url="redis://127.0.0.1:6379/0")
