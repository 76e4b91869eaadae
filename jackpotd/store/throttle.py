"""Warnings about conditions that are checked several times a second (a node down, a lease refused): said at
most once a minute, so a log a person reads stays readable through an outage."""

from __future__ import annotations

import logging
import time


class Throttled:
    """`warn` logs a warning at most once every `every` seconds; the ones in between are dropped."""

    def __init__(self, log: logging.Logger, every: float = 60.0) -> None:
        self.log = log
        self.every = every
        self._said_at = -1e9

    def warn(self, message: str) -> None:
        now = time.monotonic()
        if now - self._said_at >= self.every:
            self._said_at = now
            self.log.warning("%s", message)
