"""Ids and free text from callers (ARCHITECTURE.md, Ids and keys): one grammar, length limits, safe encodings.

Every id a caller sends (request, link, table, round, pool) becomes a Redis key, a SQL value and part of a
hit id, so it is checked here before anything else sees it. Keys and hit ids do not rely on the grammar
alone: `escape` encodes each component so that no two different tuples of ids can ever join to one string.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import quote

from .errors import InvalidInput

ID_MAX = 64
ID_GRAMMAR = f"1-{ID_MAX} characters from A-Z a-z 0-9 . _ -"
_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")  # ID_MAX
TEXT_MAX = 1000  # reasons, actors, approval references: any Unicode (NUL included), stored as escaped JSON


def require_id(field_name: str, value: object) -> str:
    """An id: 1-64 of A-Z a-z 0-9 . _ - (a UUID or ULID fits); anything else is refused before it is used."""
    if not isinstance(value, str) or _ID.fullmatch(value) is None:
        raise InvalidInput(field_name, value, f"must be {ID_GRAMMAR}")
    return value


def require_text(field_name: str, value: object, *, required: bool = False) -> str:
    """Free text: at most TEXT_MAX characters; `required` text must have something besides white space."""
    if not isinstance(value, str) or len(value) > TEXT_MAX:
        raise InvalidInput(field_name, value, f"must be text of at most {TEXT_MAX} characters")
    if required and not value.strip():
        raise InvalidInput(field_name, value, "must not be empty")
    return value


_SCOPED = re.compile(r"[A-Za-z0-9._:-]+")  # ids joined by ':' (a request's key, `<caller>:<request_id>`)


def escape(value: str) -> str:
    """One component of a key or hit id: ids as they are, anything else percent-encoded (so never ':' or '{}')."""
    if _ID.fullmatch(value):
        return value
    if _SCOPED.fullmatch(value):  # on every call: quote's own result, where ':' is the only character it encodes
        return value.replace(":", "%3A")
    return quote(value, safe="")


_HIT_ID = re.compile(r"([A-Za-z0-9._-]{1,64}):([A-Za-z0-9._-]{1,64}):([A-Za-z0-9._-]{1,64}):([1-9][0-9]{0,4})")


def parse_hit_id(value: object) -> tuple[str, str, str, int]:
    """A hit id as `hit_id` makes it from ids of the grammar: (link, table, round, seat), or refused."""
    found = _HIT_ID.fullmatch(value) if isinstance(value, str) else None
    if found is None:
        raise InvalidInput("hit_id", value, "must be <link_id>:<table_id>:<round_id>:<seat>, as a hit reports it")
    link_id, table_id, round_id, seat = found.groups()
    return link_id, table_id, round_id, int(seat)


def hit_id(link_id: str, table_id: str, round_id: str, seat: int) -> str:
    """A hit is identified by (link, table, round, seat); each component is escaped, so ids never collide."""
    return f"{escape(link_id)}:{escape(table_id)}:{escape(round_id)}:{seat}"


# What free text may not print raw: C0 controls (line breaks and ESC among them), DEL, C1 controls (CSI 0x9b drives
# a terminal as ESC [ does), Unicode's own line and paragraph separators, and the bidirectional marks, embeddings,
# overrides and isolates that make a terminal show text in another order than it reads ("Trojan Source").
_BIDI = "\u200e\u200f\u202a-\u202e\u2066-\u2069"
_UNSHOWN = re.compile(f"[\\\\\x00-\x1f\x7f-\x9f\u2028\u2029{_BIDI}]")  # and the backslash, drawn doubled
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}
_JSON_UNSHOWN = re.compile(f"[\x7f-\x9f\u2028\u2029{_BIDI}]")  # what json.dumps(ensure_ascii=False) leaves raw


def _drawn(found: re.Match[str]) -> str:
    c = found.group()
    return _NAMED.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x80 else f"\\u{ord(c):04x}")


def visible(text: str) -> str:
    """Free text (a reason, a reference, a name) as every CLI prints it: each control character, line break and
    bidirectional control drawn (\\n, \\x1b, \\u009b, \\u202e) and a backslash doubled, so a caller's text can
    neither forge a row nor drive or reorder the terminal, and a typed "\\n" never passes for a drawn one."""
    return _UNSHOWN.sub(_drawn, text)


def visible_json(data: Any, **dumps: Any) -> str:
    """`data` as JSON that decodes to exactly `data` yet holds no raw control character or line break: what
    json.dumps escapes already (below 0x20), and DEL, C1 and the Unicode separators as \\u escapes."""
    return _JSON_UNSHOWN.sub(lambda c: f"\\u{ord(c.group()):04x}", json.dumps(data, ensure_ascii=False, **dumps))
