"""Configuration from flags, the environment (JACKPOTD_*) and a TOML file, in that order of precedence."""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any


@dataclass(frozen=True, slots=True)
class Settings:
    """Where the stores are and where the service listens. No store configured: embedded servers."""

    redis_url: str = ""
    postgres_dsn: str = ""
    listen: str = "127.0.0.1:50051"
    metrics_port: int = 9464
    state_dir: str = "state"
    log_level: str = "INFO"
    workers: int = 1  # gRPC worker processes beside the supervisor's ledger writer; 0: all in one process
    group_commit_ms: float = 5.0  # under load, how long the ledger writer gathers entries into one commit
    retention_seconds: int = 60  # how long Redis keeps settled rounds and answered requests once the ledger has them

    @property
    def embedded(self) -> bool:
        return not self.redis_url and not self.postgres_dsn


_NUMBERS: dict[str, type[int] | type[float]] = {"metrics_port": int, "workers": int, "group_commit_ms": float,
                                                "retention_seconds": int}


def load(config_file: str | None = None, **flags: Any) -> Settings:
    """TOML file, then JACKPOTD_<NAME> variables, then flags that were given (not None)."""
    s = Settings()
    names = {f.name for f in fields(Settings)}
    path = config_file or os.environ.get("JACKPOTD_CONFIG")
    if path:
        data = tomllib.loads(Path(path).read_text())
        s = replace(s, **{k.replace("-", "_"): v for k, v in data.items() if k.replace("-", "_") in names})
    env: dict[str, Any] = {n: os.environ[f"JACKPOTD_{n.upper()}"] for n in names
                           if f"JACKPOTD_{n.upper()}" in os.environ}
    for name, kind in _NUMBERS.items():  # the environment holds text
        if name in env:
            env[name] = kind(env[name])
    s = replace(s, **env)
    s = replace(s, **{k: v for k, v in flags.items() if v is not None and k in names})
    if bool(s.redis_url) != bool(s.postgres_dsn):
        raise SystemExit("configure both --redis-url and --postgres-dsn, or neither for the embedded servers")
    return s
