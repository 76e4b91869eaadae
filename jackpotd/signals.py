"""Ctrl-C and SIGTERM as an asyncio event: how jackpotd, the floor sign and the console learn to stop cleanly."""

from __future__ import annotations

import asyncio
import contextlib
import signal


def stop_on_signals(stop: asyncio.Event) -> None:
    """Set `stop` on SIGINT or SIGTERM (where the platform lets a loop handle signals)."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
