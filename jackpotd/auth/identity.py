"""An authenticated caller: a table (from its client certificate) or a person or device in a role."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum

from ..domain.errors import InvalidInput
from ..domain.ids import require_id


class Role(Enum):
    """ARCHITECTURE.md, Security: tables, signs, finance, floor supervisors, administrators."""

    TABLE = "table"
    DISPLAY = "display"
    FINANCE = "finance"
    SUPERVISOR = "supervisor"
    ADMIN = "admin"


@dataclass(frozen=True, slots=True)
class Identity:
    """Who is calling: `actor` is what the audit trail records; a table's actor is its table id."""

    role: Role
    actor: str
    via: str  # "certificate" or "token": how the caller proved it
    credential: str = field(default="", compare=False)  # "jti:<id>" or "serial:<hex>": what `jackpotd revoke` names
    expires: float = field(default=math.inf, compare=False)  # epoch seconds the credential expires at

    @property
    def table_id(self) -> str | None:
        return self.actor if self.role is Role.TABLE else None

    @property
    def key(self) -> str:
        """`<role>:<name>` (`table:<id>` for a table): whose a request id is, and who acted in the audit."""
        return f"{self.role.value}:{self.actor}"


# Client certificates name their holder in a URI subject alternative name:
#   urn:jackpot:table:<table_id>        a table controller
#   urn:jackpot:<role>:<name>           a person or device in a role (display, finance, supervisor, admin)
URN_PREFIX = "urn:jackpot:"


def from_uri(uri: str, via: str = "certificate") -> Identity | None:
    """The identity a certificate's URI names, or None if it names none (or an unknown role)."""
    if not uri.startswith(URN_PREFIX):
        return None
    role_name, sep, name = uri[len(URN_PREFIX):].partition(":")
    if not sep:
        return None
    try:
        role = Role(role_name)
        require_id("certificate name", name)
    except (ValueError, InvalidInput):
        return None
    return Identity(role, name, via)


def uri_of(role: Role, name: str) -> str:
    """The URI a certificate carries for this identity."""
    return f"{URN_PREFIX}{role.value}:{name}"
