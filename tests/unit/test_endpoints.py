"""Where the embedded Valkey is reached: its Unix socket when the path fits, else loopback TCP."""

from __future__ import annotations

from pathlib import Path

from jackpotd.embedded import EmbeddedValkey
from jackpotd.store.resp import RespPipeline


def test_a_short_data_dir_gets_a_unix_socket(tmp_path: Path) -> None:
    valkey = EmbeddedValkey(tmp_path / "v", port=6390)
    assert valkey.url_for(3) == f"unix://{tmp_path.resolve()}/v/valkey.sock?db=3"
    resp = RespPipeline(valkey.url_for(3))
    assert (resp.socket, resp.db) == (f"{tmp_path.resolve()}/v/valkey.sock", 3)


def test_a_path_too_long_for_a_socket_falls_back_to_tcp(tmp_path: Path) -> None:
    valkey = EmbeddedValkey(tmp_path / ("d" * 120), port=6390)
    assert valkey.socket is None
    assert valkey.url == "redis://127.0.0.1:6390/0"
    resp = RespPipeline("redis://127.0.0.1:6390/5")
    assert (resp.socket, resp.host, resp.port, resp.db) == (None, "127.0.0.1", 6390, 5)
