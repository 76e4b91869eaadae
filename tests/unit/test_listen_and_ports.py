"""The listen lock's rule (one jackpotd per port, whatever the host part) and the embedded stores' recorded ports
(issue 23): a port recorded in STATE_DIR/ports.json that another process holds is refused by name, never moved."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

from jackpotd.embedded import ports
from jackpotd.listen_lock import ListenBusy, hold_listen, listen_port


@pytest.mark.parametrize("listen", ["127.0.0.1:50051", "0.0.0.0:50051", "[::]:50051", "[::1]:50051",
                                    "localhost:50051"])
def test_the_port_alone_names_the_lock(listen: str) -> None:
    assert listen_port(listen) == 50051


def test_a_held_port_is_refused_for_any_host_and_free_once_released(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # a port nobody else's test uses while this socket holds it
        held = hold_listen(f"0.0.0.0:{port}", state_dir=str(tmp_path), command="serve")
        assert held is not None
        try:
            with pytest.raises(ListenBusy) as e:
                hold_listen(f"[::1]:{port}", state_dir=str(tmp_path / "other"), command="grpc")
            said = str(e.value)
            assert said.startswith(f"[::1]:{port} is served by another jackpotd on 0.0.0.0:{port} (pid {os.getpid()}, "
                                   f"`jackpotd serve`, state dir {tmp_path.resolve()}, since "), said
            assert said.endswith("; stop it or choose another --listen"), said
        finally:
            held.release()
        again = hold_listen(f"127.0.0.1:{port}", state_dir=str(tmp_path), command="grpc")
        assert again is not None
        again.release()
    assert hold_listen("127.0.0.1:0", state_dir=str(tmp_path), command="grpc") is None  # ephemeral: no lock


def test_recorded_ports_are_reused_and_a_taken_one_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = ports.claim(tmp_path)
    assert set(first) == {"postgres", "valkey"} and not (tmp_path / "ports.json").exists()
    ports.record(tmp_path, first)
    assert ports.claim(tmp_path) == first == json.loads((tmp_path / "ports.json").read_text())
    monkeypatch.setattr(ports, "FREE_WAIT", 0.2)
    with socket.create_server(("127.0.0.1", first["valkey"])), pytest.raises(ports.PortTaken) as e:
        ports.claim(tmp_path)
    said = str(e.value)
    assert f"the embedded valkey's port {first['valkey']}, recorded in {tmp_path / 'ports.json'}, is taken by " \
           f"pid {os.getpid()} (" in said and "remove the file" in said, said
    (tmp_path / "ports.json").write_text('{"postgres": 5432}')
    with pytest.raises(ports.PortTaken, match="does not name a port for each of postgres, valkey"):
        ports.claim(tmp_path)
