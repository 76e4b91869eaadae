"""The client side of authentication: channels that present a bearer token or a client certificate.

Used by the CLIs, the table client library, benchmarks and tests. A table in production presents its
certificate (mTLS); tokens are for people and devices in a role, and for tables on a plain-text loopback
listener in development, where `TableTokens` mints one per table from the development auth key.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import grpc

from ..domain.errors import InvalidInput
from ..domain.ids import require_id
from .credentials import RoleCredential
from .identity import Role
from .tokens import issue


def _is_id(value: str) -> bool:
    try:
        require_id("table_id", value)
    except InvalidInput:
        return False
    return True

TABLE_SERVICE = "/jackpot.v1.TableService/"


class _UnaryHeader(grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[type-arg]
    """Adds an authorization header chosen per call, to unary calls."""

    def __init__(self, header: Callable[[str, Any], str | None]) -> None:
        self._header = header

    async def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        return await continuation(_with_header(self._header, details, request), request)


class _StreamHeader(grpc.aio.UnaryStreamClientInterceptor):  # type: ignore[type-arg]
    """The same for server-streaming calls: grpc files an interceptor under one kind only, so each kind needs
    its own object."""

    def __init__(self, header: Callable[[str, Any], str | None]) -> None:
        self._header = header

    async def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        return await continuation(_with_header(self._header, details, request), request)


def _with_header(header: Callable[[str, Any], str | None], details: Any, request: Any) -> Any:
    method = details.method.decode() if isinstance(details.method, bytes) else details.method
    value = header(method, request)
    if value is None:
        return details
    metadata = grpc.aio.Metadata(*(details.metadata or ()), ("authorization", value))
    return grpc.aio.ClientCallDetails(details.method, details.timeout, metadata, details.credentials,
                                      details.wait_for_ready)


def _interceptors(header: Callable[[str, Any], str | None]) -> list[Any]:
    return [_UnaryHeader(header), _StreamHeader(header)]


def bearer(token: str) -> list[Any]:
    """Interceptors by which every call presents `token`."""
    return _interceptors(lambda method, request: f"Bearer {token}")


class TableTokens:
    """Development and tests: table calls present a token minted for the request's table, other calls the
    token of `role` (admin by default). Only a plain-text loopback listener accepts table tokens."""

    def __init__(self, key: bytes, role: Role = Role.ADMIN, name: str = "dev") -> None:
        self.key = key
        self.other = f"Bearer {issue(key, role, name)}"
        self._tables: dict[str, str] = {}

    def header(self, method: str, request: Any) -> str | None:
        if method.startswith(TABLE_SERVICE):
            table = str(getattr(request, "table_id", ""))
            if table not in self._tables:  # a table id outside the grammar gets a table's token of another name:
                holder = table if _is_id(table) else "table-id-not-an-id"  # the service names the field
                self._tables[table] = f"Bearer {issue(self.key, Role.TABLE, holder)}" if table else ""
            return self._tables[table] or None
        return self.other

    def interceptors(self) -> list[Any]:
        return _interceptors(self.header)


def open_channel(target: str, *, interceptors: Sequence[Any] = (),
                 ca: bytes | None = None, cert: bytes | None = None, key: bytes | None = None,
                 options: Sequence[tuple[str, Any]] = ()) -> grpc.aio.Channel:
    """Plain text (loopback), or TLS trusting `ca`, presenting `cert` and `key` when given (mTLS)."""
    if ca is None:
        return grpc.aio.insecure_channel(target, options=list(options), interceptors=list(interceptors))
    credentials = grpc.ssl_channel_credentials(root_certificates=ca, private_key=key, certificate_chain=cert)
    return grpc.aio.secure_channel(target, credentials, options=list(options), interceptors=list(interceptors))


def role_channel(credential: RoleCredential, target: str) -> grpc.aio.Channel:
    """A channel to jackpotd presenting a role's credential: its client certificate over TLS, else its bearer
    token (what `credentials.role_credential` found)."""
    if credential.ca is not None:
        return open_channel(target, ca=credential.ca, cert=credential.cert, key=credential.key)
    return open_channel(target, interceptors=bearer(credential.token) if credential.token else [])
