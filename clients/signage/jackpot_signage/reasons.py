"""What a sign's public page says while its link is not live: a short human text and a small code, never the
raw detail (that goes to the sign server's log). One cause, one text: the page never flips between two."""

from __future__ import annotations

from dataclasses import dataclass

import grpc


@dataclass(frozen=True)
class Offline:
    """Why a link is not live: `code` and `text` are for the public page, `detail` for the log only."""

    code: str
    text: str
    detail: str = ""

    @property
    def shown(self) -> tuple[str, str]:
        """What the page shows: a change here is news; a new detail under the same code and text is not."""
        return (self.code, self.text)


RECONNECTING = "Reconnecting…"
STARTING = "Starting up…"
UNKNOWN_LINK = "This link does not exist"
PAUSED = "Link paused"
OUT_OF_SERVICE = "Out of service"

# gRPC status -> the page's text. Anything transient reads "Reconnecting…"; what needs a person, "Out of service".
_BY_STATUS: dict[grpc.StatusCode, str] = {
    grpc.StatusCode.UNAVAILABLE: RECONNECTING,
    grpc.StatusCode.DEADLINE_EXCEEDED: RECONNECTING,
    grpc.StatusCode.CANCELLED: RECONNECTING,
    grpc.StatusCode.RESOURCE_EXHAUSTED: RECONNECTING,
    grpc.StatusCode.NOT_FOUND: UNKNOWN_LINK,
    grpc.StatusCode.FAILED_PRECONDITION: PAUSED,
}

CONNECTING = Offline("CONNECTING", "Connecting…")
NO_CREDENTIALS = Offline("NO_CREDENTIALS", STARTING)  # `make run` starts the sign before jackpotd issues them


def from_status(code: grpc.StatusCode, details: str | None) -> Offline:
    """A failed or refused stream, by its gRPC status (UNAVAILABLE: "Reconnecting…")."""
    return Offline(code.name, _BY_STATUS.get(code, OUT_OF_SERVICE), f"{code.name}: {details or ''}")


def ended() -> Offline:
    """jackpotd ended the stream (it is stopping, or let this watcher go)."""
    return Offline("ENDED", RECONNECTING, "the stream ended")


def silent(seconds: float) -> Offline:
    """No update nor heartbeat for `seconds`: the stream is taken as lost."""
    return Offline("NO_WORD", RECONNECTING, f"no word from jackpotd for {seconds:.0f} s")


def failed(e: BaseException) -> Offline:
    """Anything unexpected: the page says "Out of service"; the log has the exception."""
    return Offline("ERROR", OUT_OF_SERVICE, f"{type(e).__name__}: {e}")
