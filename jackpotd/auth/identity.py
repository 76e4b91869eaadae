"""An authenticated caller: a table (from its client certificate), a person or device in a role, or a person
acting through the floor's console (the console's credential, the person named in ON_BEHALF_OF)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum

from ..domain.errors import InvalidInput
from ..domain.ids import ID_GRAMMAR, require_id
from .errors import PermissionDenied, Unauthenticated


class Role(Enum):
    """ARCHITECTURE.md, Security: tables, signs, finance, floor supervisors, administrators, and the floor's
    web console (which reads the pools itself and acts only for a supervisor it names, ON_BEHALF_OF)."""

    TABLE = "table"
    DISPLAY = "display"
    FINANCE = "finance"
    SUPERVISOR = "supervisor"
    ADMIN = "admin"
    CONSOLE = "console"


# The gRPC metadata key a console names the person it acts for with: "supervisor:<name>" (ARCHITECTURE.md,
# Security). Taken from the console role only; clients import it from here.
ON_BEHALF_OF = "x-jackpot-on-behalf-of"
# The roles a console may act for: supervisors, whose acts on the floor (§7 hits, NSW 14.13 suspensions) it offers.
ACTS_FOR = frozenset({Role.SUPERVISOR})


@dataclass(frozen=True, slots=True)
class Identity:
    """Who is calling: `actor` is what the audit trail records; a table's actor is its table id. Through a
    console, role and actor are the person's and `agent` the console's key (its credential is the console's)."""

    role: Role
    actor: str
    via: str  # "certificate" or "token": how the caller proved it
    credential: str = field(default="", compare=False)  # "jti:<id>" or "serial:<hex>": what `jackpotd revoke` names
    expires: float = field(default=math.inf, compare=False)  # epoch seconds the credential expires at
    agent: str = ""  # "console:<name>" when a console acts for the person; "" when the person calls directly

    @property
    def table_id(self) -> str | None:
        return self.actor if self.role is Role.TABLE else None

    @property
    def key(self) -> str:
        """`<role>:<name>` (`table:<id>` for a table): whose a request id is, and who acted in the audit."""
        return f"{self.role.value}:{self.actor}"

    @property
    def audit_actor(self) -> str:
        """Who acted, as the ledger's audit records it: `console:floor-1 for supervisor:alice` through a console,
        else `key`. Dual control compares approvers by the part after the last " for ": keep this form."""
        return f"{self.agent} for {self.key}" if self.agent else self.key


def acting_for(console: Identity, value: str) -> Identity:
    """The person `console` acts for, from the ON_BEHALF_OF value `supervisor:<name>`: the person's role and
    name, the console as agent, the console's credential (revoking or expiring it ends the person's calls too).
    Unauthenticated for a value that names no one; PermissionDenied for a caller other than a console, or a
    person in a role a console may not act for."""
    if console.role is not Role.CONSOLE:
        raise PermissionDenied(f"{ON_BEHALF_OF} is taken from a console only, not from {console.role.value} "
                               f"{console.actor!r}")
    role_name, sep, name = value.partition(":")
    try:
        role = Role(role_name)
        require_id(f"{ON_BEHALF_OF} name", name)
    except (ValueError, InvalidInput):
        role = None
    if not sep or role is None:
        raise Unauthenticated(f"{ON_BEHALF_OF}={value[:100]!r} names no one: expected supervisor:<name>, the name "
                              f"{ID_GRAMMAR}")
    if role not in ACTS_FOR:
        raise PermissionDenied(f"{ON_BEHALF_OF}={value[:100]!r}: a console acts for a supervisor only, not for "
                               f"{role.value}")
    return Identity(role, name, console.via, console.credential, console.expires, agent=console.key)


# Client certificates name their holder in a URI subject alternative name:
#   urn:jackpot:table:<table_id>        a table controller
#   urn:jackpot:<role>:<name>           a person or device in a role (display, finance, supervisor, admin, console)
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
