"""Who may make a call: the guard authenticates the caller, then the request's bytes must parse, then the policy
(auth/policy.py) must let the caller's role call the method on what the request names."""

from __future__ import annotations

from typing import Any

from ..auth.guard import Guard
from ..auth.identity import Identity
from .errors import require_parsed


def admitted(guard: Guard, path: str, request: Any, context: Any) -> Identity | None:
    """The caller, checked before anything of the request is read: who (UNAUTHENTICATED), then the bytes
    (INVALID_ARGUMENT), then whether the role and the request's table allow it (PERMISSION_DENIED)."""
    return authorized(guard, path, request, guard.caller(path, context))


def authorized(guard: Guard, path: str, request: Any, identity: Identity | None) -> Identity | None:
    """`identity`, once the request's bytes parse and the policy lets it call `path` on what the request names."""
    require_parsed(request)
    guard.authorize(path, identity, request)
    return identity
