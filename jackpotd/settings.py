"""Configuration from flags, the environment (JACKPOTD_*) and a TOML file, in that order of precedence."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, EnvSettingsSource, PydanticBaseSettingsSource, SettingsConfigDict


class SettingsError(ValueError):
    """The configuration cannot be used; the message names the setting and where it came from."""


class Settings(BaseSettings):
    """Where the stores are and where the service listens. No store configured: embedded servers.

    `Settings(...)` holds exactly what it is given (tests, worker processes); `load` layers the sources.
    """

    model_config = SettingsConfigDict(env_prefix="JACKPOTD_", extra="forbid", frozen=True)

    redis_url: str = ""
    postgres_dsn: str = ""
    listen: str = "127.0.0.1:50051"
    metrics_port: int = Field(9464, ge=0, le=65535)  # 0: no metrics endpoint
    # where /metrics listens: loopback by default; a container's address (0.0.0.0) for a Prometheus beside it
    metrics_host: str = "127.0.0.1"
    # Sentinels ("host:port,host:port") to ask where `redis_master_name`'s primary is: the service follows it
    # as they fail it over (redis_url then gives the password, database and options; its host is replaced)
    redis_sentinels: str = ""
    redis_master_name: str = "jackpot"
    # the Sentinels' own password (their `requirepass`), read from a file; none: they are asked without one
    redis_sentinel_password_file: str = ""
    # a Valkey/Redis Cluster: redis_url names any one of its primaries; each link lives on its hash tag's shard
    redis_cluster: bool = False
    state_dir: str = "state"
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "INFO"
    # gRPC worker processes beside the supervisor's ledger writer; 0: all in one process
    workers: int = Field(1, ge=0)
    # under load, how long the ledger writer gathers entries into one commit
    group_commit_ms: float = Field(5.0, ge=0)
    # how long Redis keeps settled rounds and answered requests once the ledger has them
    retention_seconds: int = Field(60, ge=1)
    # a writer that has not renewed its lease for this long (paused, cut off) stops writing, and a standby ends its
    # sessions and takes its shards over (issue 23); renewed every second, so at least 2
    writer_lease_seconds: float = Field(5.0, ge=2.0, le=60.0)
    # TLS (docs/SECURITY.md): the server's certificate and key, and the CA that signs client certificates
    # (tables and role certificates). Without them the service listens in plain text, on loopback only.
    tls_cert_file: str = ""
    tls_key_file: str = ""
    tls_ca_file: str = ""
    # the key that signs and checks bearer tokens (roles); a file, never the key itself on a command line
    auth_key_file: str = ""
    # a bearer token that lives longer than this (from its issue to its expiry) is refused
    max_token_days: int = Field(30, ge=1, le=366)
    # secrets of external stores, read from files (the URL and DSN then carry no password)
    postgres_password_file: str = ""
    redis_password_file: str = ""
    # the HMAC key of the chain's checkpoints (docs/DECISIONS.md, Hash chain), a file the database never sees;
    # the ledger writer writes checkpoint_dir with it, `jackpotd audit` checks them (store/checkpoints.py).
    # Embedded stores with none set: STATE_DIR/secrets/checkpoint.key, made on first start
    checkpoint_key_file: str = ""
    # where the checkpoints are kept (default STATE_DIR/checkpoints); production: a volume of another host that
    # keeps what is appended (OPERATIONS.md, Anchors)
    checkpoint_dir: str = ""

    @property
    def embedded(self) -> bool:
        return not self.redis_url and not self.postgres_dsn

    @property
    def checkpoints(self) -> str:
        """Where the chain's checkpoints are kept."""
        return self.checkpoint_dir or str(Path(self.state_dir) / "checkpoints")

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper(cls, level: object) -> object:
        """Any case; WARN as logging spells it too."""
        if not isinstance(level, str):
            return level
        return "WARNING" if level.upper() == "WARN" else level.upper()

    @model_validator(mode="after")
    def _both_stores_or_neither(self) -> Settings:
        if bool(self.redis_url) != bool(self.postgres_dsn):
            given, missing = ("redis_url", "postgres_dsn") if self.redis_url else ("postgres_dsn", "redis_url")
            raise ValueError(f"{given} is set but {missing} is not: configure both --redis-url and --postgres-dsn, "
                             "or neither for the embedded servers")
        if self.redis_cluster and self.redis_sentinels:
            raise ValueError("redis_cluster and redis_sentinels are both set: a cluster fails over by itself, "
                             "without Sentinels; set one of them")
        if self.redis_sentinels and not self.redis_url:  # else workers would follow them, off the embedded Valkey
            raise ValueError("redis_sentinels is set but redis_url is not: Sentinels watch an external Valkey; "
                             "configure --redis-url and --postgres-dsn too, or leave the Sentinels out")
        if self.redis_sentinel_password_file and not self.redis_sentinels:
            raise ValueError("redis_sentinel_password_file is set but redis_sentinels is not: name the Sentinels "
                             "(JACKPOTD_REDIS_SENTINELS) or leave the password file out")
        if self.redis_cluster and not self.redis_url.startswith(("redis://", "rediss://")):
            raise ValueError(f"redis_cluster needs a redis:// or rediss:// redis_url naming one of the cluster's "
                             f"nodes, not {self.redis_url[:40]!r}")
        return self

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
                                   env_settings: PydanticBaseSettingsSource,
                                   dotenv_settings: PydanticBaseSettingsSource,
                                   file_secret_settings: PydanticBaseSettingsSource,
                                   ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings,)  # the environment and the file are read by `load` only


NAMES = tuple(Settings.model_fields)


def load(config_file: str | None = None, **flags: Any) -> Settings:
    """TOML file (`config_file` or $JACKPOTD_CONFIG), then JACKPOTD_<NAME> variables, then flags that were given
    (not None). Raises SettingsError for an unknown key or flag, a value of the wrong type, or one store without
    the other."""
    given = {name: value for name, value in flags.items() if value is not None}
    _refuse_unknown(given, "flag", "load()")
    path = config_file or os.environ.get("JACKPOTD_CONFIG")
    file = _read_toml(Path(path)) if path else {}
    env = EnvSettingsSource(Settings)()  # JACKPOTD_<NAME>, any case; numbers are parsed by validation
    try:
        return Settings(**{**file, **env, **given})
    except ValidationError as e:
        raise SettingsError(_explain(e, given, env, path)) from None


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        data = tomllib.loads(path.read_text())
    except OSError as e:
        raise SettingsError(f"cannot read the configuration file {path}: {e.strerror or e}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise SettingsError(f"{path} is not valid TOML: {e}") from None
    settings: dict[str, Any] = {}
    for key, value in data.items():
        name = key.replace("-", "_")
        if name in settings:
            raise SettingsError(f"{path}: {key!r} is given twice (with '-' and with '_')")
        settings[name] = value
    _refuse_unknown(settings, "key", str(path))
    return settings


def _refuse_unknown(values: Mapping[str, object], what: str, where: str) -> None:
    unknown = sorted(set(values) - set(NAMES))
    if unknown:
        listed = ", ".join(repr(u) for u in unknown)
        raise SettingsError(f"{where}: unknown {what}{'s' if len(unknown) > 1 else ''} {listed}; "
                            f"valid: {', '.join(NAMES)}")


def _explain(error: ValidationError, flags: Mapping[str, object], env: Mapping[str, object], path: str | None) -> str:
    problems = []
    for e in error.errors():
        if not e["loc"]:  # a check of the whole (both stores or neither)
            problems.append(e["msg"].removeprefix("Value error, "))
            continue
        name = str(e["loc"][0])
        source = (f"flag --{name.replace('_', '-')}" if name in flags else
                  f"${Settings.model_config.get('env_prefix', '')}{name.upper()}" if name in env else
                  f"{path}" if path else "default")
        problems.append(f"{name} = {e['input']!r} (from {source}): {e['msg']}")
    return "invalid settings: " + "; ".join(problems)
