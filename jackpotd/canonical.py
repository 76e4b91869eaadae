"""The one canonical JSON form: sorted keys, no spaces, UTF-8. Hashes and idempotency depend on it."""

from __future__ import annotations

from typing import Any

import orjson


def canonical_json(value: Any) -> str:
    """Same value, same text: request hashes, journal entries and the ledger's hash chain use this."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
