"""A method's calls counted by status (jackpotd_requests_total) and, when answered OK, timed
(jackpotd_request_seconds); a server-streaming call is counted when it ends, timed from its start to its end."""

from __future__ import annotations

import time

import grpc

from ..metrics import LATENCY, REQUESTS


class CallMeter:
    """One method's counters, labelled once: OK answers and their latency, and refusals by status."""

    __slots__ = ("_latency", "_ok", "method")

    def __init__(self, method: str) -> None:
        self.method = method
        self._ok = REQUESTS.labels(method, grpc.StatusCode.OK.name)
        self._latency = LATENCY.labels(method)

    def answered(self, started: float) -> None:
        """An OK answer to a call started at `started` (time.perf_counter)."""
        self._ok.inc()
        self._latency.observe(time.perf_counter() - started)

    def refused(self, code: grpc.StatusCode) -> None:
        """A call answered with `code`."""
        REQUESTS.labels(self.method, code.name).inc()

    def ended(self, code: grpc.StatusCode, started: float) -> None:
        """A call started at `started` that ended with `code`: timed when OK, like a unary answer."""
        if code is grpc.StatusCode.OK:
            self.answered(started)
        else:
            self.refused(code)
