"""Who is calling, from the connection or the call: a verified client certificate (TLS), else a bearer token
(`authorization: Bearer <token>`); a console's call may name the supervisor it acts for (`ON_BEHALF_OF`).
Checked against the policy before any handler runs."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Iterable
from contextvars import ContextVar
from typing import Any, TypeVar

from cryptography import x509

from ..domain.ids import require_id
from .errors import PermissionDenied, Unauthenticated
from .identity import ON_BEHALF_OF, URN_PREFIX, Identity, Role, acting_for, from_uri
from .policy import authorize, is_open
from .tokens import MAX_LIFETIME, verify

T = TypeVar("T")

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
    found = from_uri(ours[0])
    if found is None:
        return None
    return Identity(found.role, found.actor, found.via, f"serial:{cert.serial_number:x}",
                    cert.not_valid_after_utc.timestamp())


class Guard:
    """Identifies callers and applies the policy. `tables_by_token`: a table may prove itself with a bearer
    token (only on a plain-text loopback listener, for development and tests); otherwise tables need their
    client certificate."""

    def __init__(self, token_key: bytes | None, *, tables_by_token: bool,
                 max_token_seconds: int = MAX_LIFETIME) -> None:
        self.token_key = token_key
        self.tables_by_token = tables_by_token
        self.max_token_seconds = max_token_seconds
        self.revoked: set[str] = set()  # "jti:<id>" and "serial:<hex>" (`jackpotd revoke`), kept current by app.py
        self._certs: dict[bytes, Identity | None] = {}
        self._tokens: dict[str, tuple[Identity, float]] = {}  # verified tokens and their expiry
        self._streams: dict[int, _Watch] = {}  # open streams, each watched for the end of its credential

    def identify(self, context: Any) -> Identity | None:
        """The caller: its credential's holder, or the supervisor a console names (`acting_for`)."""
        metadata = context.invocation_metadata() or ()
        holder = self._holder(context, metadata)
        behalf = _on_behalf_of(metadata)
        if holder is None or behalf is None:
            return holder
        return acting_for(holder, behalf)

    def _holder(self, context: Any, metadata: Any) -> Identity | None:
        """Who holds the call's credential: a certificate's holder, else a token's, else None."""
        pem = (context.auth_context() or {}).get("x509_pem_cert")
        if pem:
            return self._valid(self._certificate(pem[0]))
        token = _bearer(metadata)
        if token is None:
            return None
        if self.token_key is None:
            raise Unauthenticated("this service accepts no bearer tokens (no auth key is configured)")
        identity = self._valid(self._token(token))
        if identity.role is Role.TABLE and not self.tables_by_token:
            raise Unauthenticated("a table authenticates with its client certificate, not a token")
        return identity

    def _valid(self, identity: Identity) -> Identity:
        """The identity, unless its credential is revoked or expired (a certificate is checked by TLS when the
        connection opens, not on every call of a long-lived connection)."""
        if identity.credential in self.revoked:
            raise Unauthenticated(f"this credential ({identity.credential}) was revoked")
        if identity.expires <= time.time():
            raise Unauthenticated(f"this credential ({identity.credential}) has expired")
        return identity

    def revoke(self, credentials: Iterable[str]) -> None:
        """Add to the revocation list; open streams of those credentials end at the next sweep."""
        self.revoked.update(credentials)

    def sweep(self, now: float | None = None) -> int:
        """End every open stream whose credential is revoked or expired; how many were ended."""
        now = time.time() if now is None else now
        ended = 0
        for watch in self._streams.values():
            if not watch.ended and (watch.identity.credential in self.revoked or watch.identity.expires <= now):
                watch.end()
                ended += 1
        return ended

    async def while_valid(self, identity: Identity | None, stream: AsyncIterator[T]) -> AsyncIterator[T]:
        """The stream's messages until its caller's credential is revoked or expires (Unauthenticated then): an
        open stream never outlives its credential by more than a sweep. One watch per stream, no task per message:
        the sweep interrupts the stream's task while it waits for the next message (a cancellation this turns into
        Unauthenticated), and a stream ended while its message is being sent ends before it asks for another."""
        if identity is None:  # open methods (health) need no credential
            async for item in stream:
                yield item
            return
        task = asyncio.current_task()
        assert task is not None
        watch = _Watch(identity)
        self._streams[id(watch)] = watch
        try:
            while True:
                if watch.ended:
                    raise Unauthenticated(watch.why(self.revoked))
                cancelling = task.cancelling()
                watch.waiting = task
                try:
                    item = await anext(stream)
                except StopAsyncIteration:
                    if not watch.interrupted:
                        return
                    task.uncancel()  # the stream ended on the interruption: the credential ended first
                    raise Unauthenticated(watch.why(self.revoked)) from None
                except asyncio.CancelledError:
                    if watch.interrupted and task.uncancel() <= cancelling:  # ours alone: the credential ended
                        raise Unauthenticated(watch.why(self.revoked)) from None
                    raise  # the call itself was cancelled (the caller went away, or the server stopped)
                except Exception:
                    if watch.interrupted:  # the stream made an error of the interruption: the credential ended
                        task.uncancel()
                        raise Unauthenticated(watch.why(self.revoked)) from None
                    raise
                finally:
                    watch.waiting = None
                if watch.interrupted:  # the stream swallowed the interruption: it is ours to take back
                    task.uncancel()
                    raise Unauthenticated(watch.why(self.revoked))
                yield item
        finally:  # revoked, expired, or the call itself ended (cancelled): close the stream
            self._streams.pop(id(watch), None)
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                with contextlib.suppress(Exception):
                    await aclose()

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
        if identity is not None and identity.role is Role.TABLE and isinstance(table_id, str):
            require_id("table_id", table_id)  # a malformed id is named as such, before whose table it is
        authorize(method, identity, table_id if identity is not None and identity.role is Role.TABLE else None)

    def _token(self, token: str) -> Identity:
        """A token's identity; a token verified before is trusted until it expires (verifying costs more than
        the rest of a call)."""
        assert self.token_key is not None
        known = self._tokens.get(token)
        if known is not None and known[1] > time.time():
            return known[0]
        identity, expires = verify(self.token_key, token, self.max_token_seconds)
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


class _Watch:
    """An open stream's caller, whether the sweep has ended it, and its task while it waits for its next message
    (the one moment the sweep interrupts it)."""

    __slots__ = ("ended", "identity", "interrupted", "waiting")

    def __init__(self, identity: Identity) -> None:
        self.identity = identity
        self.ended = False
        self.interrupted = False
        self.waiting: asyncio.Task[Any] | None = None

    def end(self) -> None:
        """The credential has ended: interrupt the wait for the next message, if the stream is waiting."""
        self.ended = True
        if self.waiting is not None and not self.interrupted:
            self.interrupted = self.waiting.cancel()

    def why(self, revoked: set[str]) -> str:
        """Unauthenticated's message: revoked or expired."""
        why = "was revoked" if self.identity.credential in revoked else "has expired"
        return f"this credential ({self.identity.credential}) {why}: the stream ends"


def _on_behalf_of(metadata: Any) -> str | None:
    """The ON_BEHALF_OF value of a call, if it has one; Unauthenticated for two (one person per call)."""
    found = [str(value) for key, value in metadata if key == ON_BEHALF_OF]
    if len(found) > 1:
        raise Unauthenticated(f"{ON_BEHALF_OF} is given {len(found)} times: a call acts for one person")
    return found[0] if found else None


def _bearer(metadata: Any) -> str | None:
    """The bearer token of a call's `authorization` header, if it has one."""
    for key, value in metadata:
        if key == "authorization":
            scheme, _, token = str(value).partition(" ")
            if scheme.lower() != "bearer" or not token:
                raise Unauthenticated("the authorization header must be 'Bearer <token>'")
            return token.strip()
    return None
