"""The pure rules of the jackpot network (RULES.md): no I/O, no gRPC, no Redis, no SQL."""

from .hands import evaluate_hand

__all__ = ["evaluate_hand"]
