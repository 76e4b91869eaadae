"""Who is calling, from the connection or the call: a verified client certificate (TLS), else a bearer token
(`authorization: Bearer <token>`). Checked against the policy before any handler runs."""

from __future__ import annotations

import time
from contextvars import ContextVar
from typing import Any

from cryptography import x509

from .errors import PermissionDenied, Unauthenticated
from .identity import URN_PREFIX, Identity, Role, from_uri
from .policy import authorize, is_open
from .tokens import verify

# The caller of the RPC being handled (None for the open services); set by the interceptor for the handler.
CALLER: ContextVar[Identity | None] = ContextVar("jackpotd_caller", default=None)

TABLE_SERVICE = "/jackpot.v1.TableService/"
_CACHE_MAX = 10_000


def identity_of_certificate(pem: bytes) -> Identity | None:
    """The identity a client certificate's URI names (the TLS layer has verified it against our CA); None
    for a certificate that names none, more than one, or cannot be read."""
    try:
        cert = x509.load_pem_x509_certificate(pem)
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except (ValueError, x509.ExtensionNotFound):
        return None
    ours = [uri for uri in names.get_values_for_type(x509.UniformResourceIdentifier) if uri.startswith(URN_PREFIX)]
    if len(ours) != 1:  # one holder per certificate: a second claim is never chosen between
        return None
    return from_uri(ours[0])


class Guard:
    """Identifies callers and applies the policy. `tables_by_token`: a table may prove itself with a bearer
    token (only on a plain-text loopback listener, for development and tests); otherwise tables need their
    client certificate."""

    def __init__(self, token_key: bytes | None, *, tables_by_token: bool) -> None:
        self.token_key = token_key
        self.tables_by_token = tables_by_token
        self._certs: dict[bytes, Identity | None] = {}
        self._tokens: dict[str, tuple[Identity, float]] = {}  # verified tokens and their expiry

    def identify(self, context: Any) -> Identity | None:
        pem = (context.auth_context() or {}).get("x509_pem_cert")
        if pem:
            return self._certificate(pem[0])
        token = _bearer(context.invocation_metadata() or ())
        if token is None:
            return None
        if self.token_key is None:
            raise Unauthenticated("this service accepts no bearer tokens (no auth key is configured)")
        identity = self._token(token)
        if identity.role is Role.TABLE and not self.tables_by_token:
            raise Unauthenticated("a table authenticates with its client certificate, not a token")
        return identity

    def caller(self, method: str, context: Any) -> Identity | None:
        """Who calls `method` (None for the open services); Unauthenticated when a closed method has no
        valid credential."""
        if is_open(method):
            return None
        identity = self.identify(context)
        if identity is None:
            raise Unauthenticated(f"{method.rsplit('/', 1)[-1]} needs a credential: a client certificate or "
                                  "a bearer token")
        return identity

    def authorize(self, method: str, identity: Identity | None, request: Any) -> None:
        """Raise unless `identity` may call `method` with `request` (a table: on its own table only)."""
        if is_open(method):
            return
        table_id = getattr(request, "table_id", None)
        if identity is not None and identity.role is Role.TABLE and not isinstance(table_id, str):
            raise PermissionDenied(f"a table may not call {method.rsplit('/', 1)[-1]}: it names no table")
        authorize(method, identity, table_id if identity is not None and identity.role is Role.TABLE else None)

    def _token(self, token: str) -> Identity:
        """A token's identity; a token verified before is trusted until it expires (verifying costs more than
        the rest of a call)."""
        assert self.token_key is not None
        known = self._tokens.get(token)
        if known is not None and known[1] > time.time():
            return known[0]
        identity, expires = verify(self.token_key, token)
        if len(self._tokens) >= _CACHE_MAX:
            self._tokens.clear()
        self._tokens[token] = (identity, expires)
        return identity

    def _certificate(self, pem: bytes) -> Identity:
        if pem not in self._certs:  # parsing costs more than the rest of a check: once per certificate
            if len(self._certs) >= _CACHE_MAX:
                self._certs.clear()
            self._certs[pem] = identity_of_certificate(pem)
        found = self._certs[pem]
        if found is None:
            raise Unauthenticated("the client certificate names no table or role (urn:jackpot:<role>:<name>)")
        return found


def _bearer(metadata: Any) -> str | None:
    for key, value in metadata:
        if key == "authorization":
            scheme, _, token = str(value).partition(" ")
            if scheme.lower() != "bearer" or not token:
                raise Unauthenticated("the authorization header must be 'Bearer <token>'")
            return token.strip()
    return None
