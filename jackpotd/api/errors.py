"""One interceptor maps every error to its gRPC status (API.md, Errors), and counts calls for metrics."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import asdict
from typing import Any

import grpc
from google.protobuf.message import Message

from ..auth.errors import PermissionDenied, Unauthenticated
from ..auth.guard import CALLER, Guard
from ..auth.identity import Identity
from ..auth.policy import is_open
from ..domain.errors import Conflict, FailedPrecondition, InvalidInput, NotFound
from ..domain.ids import parse_hit_id
from ..metrics import ADMIN_AUDIT_FAILURES, LATENCY, REQUESTS
from ..service.errors import Unavailable
from ..service.ports import AdminAct

log = logging.getLogger("jackpotd.api")

# Writes one row of the administrative audit trail (the service's AdminTrail.record, on the AuditTrail port).
Recorder = Callable[[AdminAct], Awaitable[None]]
AUDITED = "/jackpot.v1.AdminService/"  # every call under it leaves a row, refused or not
UNAUDITED = frozenset({"/jackpot.v1.AdminService/ListAudit"})  # reading the trail is no act

_STATUS: list[tuple[type[BaseException], grpc.StatusCode]] = [
    (InvalidInput, grpc.StatusCode.INVALID_ARGUMENT),
    (NotFound, grpc.StatusCode.NOT_FOUND),
    (FailedPrecondition, grpc.StatusCode.FAILED_PRECONDITION),
    (Conflict, grpc.StatusCode.ALREADY_EXISTS),
    (Unavailable, grpc.StatusCode.UNAVAILABLE),  # adapters raise it for every store failure
    (Unauthenticated, grpc.StatusCode.UNAUTHENTICATED),
    (PermissionDenied, grpc.StatusCode.PERMISSION_DENIED),
]


def status_of(error: BaseException) -> tuple[grpc.StatusCode, str]:
    """The status and message for an error; unknown errors are INTERNAL and logged."""
    for kind, code in _STATUS:
        if isinstance(error, kind):
            return code, str(error)[:MESSAGE_MAX]
    log.exception("internal error", exc_info=error)
    return grpc.StatusCode.INTERNAL, f"internal error: {type(error).__name__}"


MESSAGE_MAX = 2000  # a status message travels in a header: far below gRPC's 8 KB metadata limit


class Malformed:
    """Request bytes that do not parse as the method's message (the handler sees this instead)."""

    def __init__(self, error: Exception) -> None:
        self.error = error


def _tolerant(deserialize: Callable[[bytes], Any] | None) -> Callable[[bytes], Any] | None:
    """A deserializer that hands a Malformed to the handler instead of failing (gRPC would say UNKNOWN)."""
    if deserialize is None:
        return None

    def parse(data: bytes) -> Any:
        try:
            return deserialize(data)
        except Exception as e:
            return Malformed(e)

    return parse


def _require_parsed(request: Any) -> None:
    if isinstance(request, Malformed):
        raise InvalidInput("request", f"<{type(request.error).__name__}>",
                           f"the message bytes do not parse (strings must be valid UTF-8): {request.error}")


async def _record_nothing(act: AdminAct) -> None:
    return None


class ErrorInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[type-arg]
    """Wraps every unary and server-streaming handler, once per method: the guard identifies the caller and
    applies the policy (auth/policy.py), then errors become statuses; every AdminService call but ListAudit,
    refused or not, leaves a row through `record`."""

    def __init__(self, guard: Guard, record: Recorder = _record_nothing) -> None:
        self.guard = guard
        self.record = record
        self._wrapped: dict[str, Any] = {}

    async def intercept_service(self, continuation: Callable[[Any], Awaitable[Any]], details: Any) -> Any:
        wrapped = self._wrapped.get(details.method)
        if wrapped is None:
            handler = await continuation(details)
            if handler is None:
                return None
            wrapped = self._wrapped[details.method] = _wrap(details.method, handler, self.guard,
                                                                        self.record)
        return wrapped


def _wrap(path: str, handler: Any, guard: Guard, record: Recorder = _record_nothing) -> Any:
    method = path.rsplit("/", 1)[-1]
    ok = REQUESTS.labels(method, grpc.StatusCode.OK.name)
    latency = LATENCY.labels(method)
    if handler.unary_unary is not None and path.startswith(AUDITED) and path not in UNAUDITED:
        return _audited(path, handler, guard, record)
    if handler.unary_unary is not None:
        inner = handler.unary_unary

        async def unary(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            started = time.perf_counter()
            try:
                CALLER.set(_admitted(guard, path, request, context))
                response = await inner(request, context)
            except grpc.aio.AbortError:  # the handler set its own status (health: NOT_FOUND for an unknown name)
                raise
            except Exception as e:
                code, message = status_of(e)
                REQUESTS.labels(method, code.name).inc()
                await context.abort(code, message)
            ok.inc()
            latency.observe(time.perf_counter() - started)
            return response

        return grpc.unary_unary_rpc_method_handler(unary, _tolerant(handler.request_deserializer),
                                                   handler.response_serializer)
    if handler.unary_stream is not None:
        inner_stream = handler.unary_stream

        async def stream(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> AsyncIterator[Any]:
            try:
                identity = _admitted(guard, path, request, context)
                CALLER.set(identity)
                # a stream ends when its caller's credential is revoked or expires (UNAUTHENTICATED)
                async for item in guard.while_valid(identity, inner_stream(request, context)):
                    yield item
            except Exception as e:
                code, message = status_of(e)
                REQUESTS.labels(method, code.name).inc()
                await context.abort(code, message)

        return grpc.unary_stream_rpc_method_handler(stream, _tolerant(handler.request_deserializer),
                                                    handler.response_serializer)
    if is_open(path):  # reflection: bidirectional, open to all
        return handler
    # A client-streaming or bidirectional method no policy covers: nobody may call it until one does.
    return _refused(path, handler)


def _audited(path: str, handler: Any, guard: Guard, record: Recorder) -> Any:
    """A unary administrative method's handler: as _wrap's, and once the call is answered (OK or not, even
    refused), one row of the audit trail with the authenticated actor. A row that cannot be written changes
    nothing of the answer: it is logged at ERROR and counted (jackpotd_admin_audit_failures_total)."""
    method = path.rsplit("/", 1)[-1]
    ok = REQUESTS.labels(method, grpc.StatusCode.OK.name)
    latency = LATENCY.labels(method)
    failed = ADMIN_AUDIT_FAILURES.labels(method)
    inner = handler.unary_unary

    async def write(request: Any, identity: Identity | None, outcome: str, detail: str) -> None:
        act = _act(method, request, identity, outcome, detail)
        try:
            await record(act)
        except Exception:
            failed.inc()
            log.error("the audit trail did not record %s by %r (%s): %s", method, act.actor, outcome, _fields(act),
                      exc_info=True)

    async def unary(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        started = time.perf_counter()
        identity: Identity | None = None
        try:
            identity = guard.caller(path, context)
            CALLER.set(_authorized(guard, path, request, identity))
            response = await inner(request, context)
        except asyncio.CancelledError:
            await asyncio.shield(write(request, identity, grpc.StatusCode.CANCELLED.name, "the call was cancelled"))
            raise
        except Exception as e:
            code, message = status_of(e)
            REQUESTS.labels(method, code.name).inc()
            await write(request, identity, code.name, message)
            await context.abort(code, message)
        ok.inc()
        latency.observe(time.perf_counter() - started)
        await write(request, identity, grpc.StatusCode.OK.name, "")
        return response

    return grpc.unary_unary_rpc_method_handler(unary, _tolerant(handler.request_deserializer),
                                               handler.response_serializer)


def _act(method: str, request: Any, identity: Identity | None, outcome: str, detail: str) -> AdminAct:
    """The audit row of a call: the authenticated actor ('' when none), and what the request names (nothing
    if its bytes did not parse)."""
    fields = request.DESCRIPTOR.fields_by_name if isinstance(request, Message) else {}
    audit = request.audit if "audit" in fields else None

    def text(name: str) -> str:
        return str(getattr(request, name)) if name in fields else ""

    link_id, table_id = text("link_id"), text("table_id")
    if "hit_id" in fields:  # a hit decision names its link and table in its hit id, when it is one
        with contextlib.suppress(InvalidInput):
            link_id, table_id, _, _ = parse_hit_id(text("hit_id"))
    reason = text("reason") or (audit.reason if audit is not None else "")
    return AdminAct(actor=identity.actor if identity else "", role=identity.role.value if identity else "",
                    method=method, request_id=text("request_id"), link_id=link_id, table_id=table_id, reason=reason,
                    approval_ref=audit.approval_ref if audit is not None else "", outcome=outcome, detail=detail)


def _fields(act: AdminAct) -> dict[str, str]:
    """An act's text fields by name, as a row that could not be written is logged."""
    return {k: v for k, v in asdict(act).items() if k not in ("id", "at")}


def _admitted(guard: Guard, path: str, request: Any, context: Any) -> Identity | None:
    """The caller, checked before anything of the request is read: who (UNAUTHENTICATED), then the bytes
    (INVALID_ARGUMENT), then whether the role and the request's table allow it (PERMISSION_DENIED)."""
    return _authorized(guard, path, request, guard.caller(path, context))


def _authorized(guard: Guard, path: str, request: Any, identity: Identity | None) -> Identity | None:
    """`identity`, once the request's bytes parse and the policy lets it call `path` on what the request names."""
    _require_parsed(request)
    guard.authorize(path, identity, request)
    return identity


def _refused(path: str, handler: Any) -> Any:
    async def refuse(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        await context.abort(grpc.StatusCode.PERMISSION_DENIED, f"{path} is in no access policy")

    if handler.stream_unary is not None:
        return grpc.stream_unary_rpc_method_handler(refuse, handler.request_deserializer,
                                                    handler.response_serializer)
    return grpc.stream_stream_rpc_method_handler(refuse, handler.request_deserializer, handler.response_serializer)
