"""The one canonical JSON form: sorted keys, no spaces, UTF-8. Hashes and idempotency depend on it."""

from __future__ import annotations

import hashlib
from typing import Any

import orjson


def canonical_json(value: Any) -> str:
    """Same value, same text: request hashes, journal entries and the ledger's hash chain use this."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def request_identity(request_id: str, request_hash: str) -> str:
    """Which request an entry is: its id and its content together (two requests may carry equal content).
    A caller is answered only when the ledger holds this identity at its sequence."""
    return hashlib.sha256(f"{request_id}\0{request_hash}".encode()).hexdigest()
