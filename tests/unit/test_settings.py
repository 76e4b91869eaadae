"""Settings come from a TOML file, then JACKPOTD_* variables, then flags; anything unusable is refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from jackpotd import cli
from jackpotd.settings import Settings, SettingsError, load


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.upper().startswith("JACKPOTD_"):
            monkeypatch.delenv(name)


def _toml(tmp_path: Path, text: str) -> str:
    config = tmp_path / "jackpotd.toml"
    config.write_text(text)
    return str(config)


def test_flags_beat_environment_beat_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = _toml(tmp_path, 'listen = "0.0.0.0:1"\nworkers = 3\ngroup-commit-ms = 1.5\nstate_dir = "s"\n')
    monkeypatch.setenv("JACKPOTD_WORKERS", "2")
    monkeypatch.setenv("JACKPOTD_GROUP_COMMIT_MS", "2.5")
    s = load(config, listen="127.0.0.1:9", workers=None)
    assert (s.listen, s.workers, s.group_commit_ms, s.state_dir) == ("127.0.0.1:9", 2, 2.5, "s")
    assert s.retention_seconds == 60  # the default where no source says
    assert s.embedded


def test_the_file_may_come_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JACKPOTD_CONFIG", _toml(tmp_path, "retention-seconds = 5\n"))
    assert load().retention_seconds == 5
    other = tmp_path / "other"
    other.mkdir()
    assert load(_toml(other, "retention_seconds = 7\n")).retention_seconds == 7  # the argument wins


def test_environment_numbers_are_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JACKPOTD_METRICS_PORT", "0")
    monkeypatch.setenv("JACKPOTD_RETENTION_SECONDS", "120")
    monkeypatch.setenv("JACKPOTD_GROUP_COMMIT_MS", "0.5")
    monkeypatch.setenv("JACKPOTD_LOG_LEVEL", "debug")
    s = load()
    assert (s.metrics_port, s.retention_seconds, s.group_commit_ms, s.log_level) == (0, 120, 0.5, "DEBUG")
    assert isinstance(s.metrics_port, int)


def test_defaults() -> None:
    assert load() == Settings()
    assert Settings().listen == "127.0.0.1:50051" and Settings().workers == 1


def test_unknown_toml_key_is_refused_naming_it_and_the_valid_ones(tmp_path: Path) -> None:
    config = _toml(tmp_path, 'listen = "127.0.0.1:1"\nworker = 2\n')
    with pytest.raises(SettingsError, match=r"jackpotd\.toml: unknown key 'worker'; valid: .*\bworkers\b"):
        load(config)


def test_unknown_flag_is_refused() -> None:
    with pytest.raises(SettingsError, match=r"unknown flag 'bogus'; valid: redis_url, postgres_dsn"):
        load(None, bogus=1)


def test_wrong_type_is_refused_naming_the_field_and_where_it_came_from(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SettingsError, match=r"workers = 'many' \(from .*jackpotd\.toml\): .*valid integer"):
        load(_toml(tmp_path, 'workers = "many"\n'))
    monkeypatch.setenv("JACKPOTD_METRICS_PORT", "lots")
    with pytest.raises(SettingsError, match=r"metrics_port = 'lots' \(from \$JACKPOTD_METRICS_PORT\)"):
        load()
    with pytest.raises(SettingsError, match=r"metrics_port = -1 \(from flag --metrics-port\)"):
        load(None, metrics_port=-1)


def test_a_file_that_is_missing_or_not_toml_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="cannot read the configuration file"):
        load(str(tmp_path / "missing.toml"))
    with pytest.raises(SettingsError, match="is not valid TOML"):
        load(_toml(tmp_path, "workers = \n"))


@pytest.mark.parametrize("given", [{"redis_url": "redis://127.0.0.1:6379/0"},
                                   {"postgres_dsn": "postgresql://jackpot@db/jackpot"}])
def test_one_store_without_the_other_is_refused(given: dict[str, str]) -> None:
    with pytest.raises(SettingsError, match="configure both --redis-url and --postgres-dsn"):
        load(None, **given)


def test_both_stores_from_different_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JACKPOTD_POSTGRES_DSN", "postgresql://jackpot@db/jackpot")
    s = load(_toml(tmp_path, 'redis-url = "redis://r:6379/0"\n'))
    assert (s.redis_url, s.postgres_dsn, s.embedded) == ("redis://r:6379/0", "postgresql://jackpot@db/jackpot", False)


def test_settings_are_frozen_and_travel_as_a_dict() -> None:
    s = load(None, redis_url="redis://r", postgres_dsn="postgresql://p", workers=4)
    with pytest.raises(ValueError, match="frozen"):
        s.workers = 2  # type: ignore[misc]
    assert Settings.model_validate(s.model_dump()) == s
    assert hash(s) == hash(Settings.model_validate(s.model_dump()))


def test_the_cli_prints_a_settings_error_and_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["migrate", "--config", _toml(tmp_path, "colour = 1\n")]) == 2
    assert "unknown key 'colour'" in capsys.readouterr().err
    assert cli.main(["migrate", "--redis-url", "redis://127.0.0.1:1/0"]) == 2
    assert "configure both" in capsys.readouterr().err


@pytest.mark.parametrize(("given", "refusal"), [
    ({"redis_url": "redis://n1:6379/0", "redis_sentinels": "s:26379"}, "redis_cluster and redis_sentinels"),
    ({"redis_url": "unix:///run/valkey.sock", "redis_sentinels": ""}, "needs a redis:// or rediss:// redis_url"),
])
def test_a_cluster_is_refused_with_sentinels_or_a_socket(given: dict[str, str], refusal: str) -> None:
    with pytest.raises(SettingsError, match=refusal):
        load(None, postgres_dsn="postgresql://jackpot@db/jackpot", redis_cluster=True, **given)


def test_a_cluster_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JACKPOTD_REDIS_CLUSTER", "true")
    s = load(None, redis_url="rediss://n1:6379/0", postgres_dsn="postgresql://jackpot@db/jackpot")
    assert s.redis_cluster is True


def test_a_sentinel_password_needs_sentinels(tmp_path: Path) -> None:
    stores = {"redis_url": "redis://valkey:6379/0", "postgres_dsn": "postgresql://jackpot@db/jackpot"}
    with pytest.raises(SettingsError, match="redis_sentinel_password_file is set but redis_sentinels is not"):
        load(None, redis_sentinel_password_file=str(tmp_path / "pw"), **stores)
    given = load(None, redis_sentinel_password_file=str(tmp_path / "pw"), redis_sentinels="s:26379", **stores)
    assert given.redis_sentinel_password_file == str(tmp_path / "pw")


def test_sentinels_need_an_external_valkey() -> None:
    with pytest.raises(SettingsError, match="redis_sentinels is set but redis_url is not"):
        load(None, redis_sentinels="s:26379")
