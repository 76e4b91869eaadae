"""The one server interceptor: every unary and server-streaming handler wrapped, once per method, in the steps each
call takes: admission (admission.py), the handler, metering (metering.py), the audit row of an administrative act
(admin_acts.py), and errors answered as statuses (errors.py)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc

from ..auth.guard import CALLER, Guard
from ..auth.identity import Identity
from ..auth.policy import is_open
from ..service.deadlines import answered_in_time, caller_deadline
from .admin_acts import ActWriter, Recorder, is_audited, record_nothing
from .admission import admitted, authorized
from .errors import status_of, tolerant
from .metering import CallMeter

Ctx = grpc.aio.ServicerContext[Any, Any]


class CallInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[type-arg]
    """Admits, meters, audits and answers every call: the guard identifies the caller and applies the policy
    (auth/policy.py), errors become statuses, and every AdminService call but ListAudit, refused or not, leaves a
    row through `record`."""

    def __init__(self, guard: Guard, record: Recorder = record_nothing) -> None:
        self.guard = guard
        self.record = record
        self._wrapped: dict[str, Any] = {}

    async def intercept_service(self, continuation: Callable[[Any], Awaitable[Any]], details: Any) -> Any:
        wrapped = self._wrapped.get(details.method)
        if wrapped is None:
            handler = await continuation(details)
            if handler is None:
                return None
            wrapped = self._wrapped[details.method] = _wrap(details.method, handler, self.guard, self.record)
        return wrapped


def _wrap(path: str, handler: Any, guard: Guard, record: Recorder) -> Any:
    """The handler of `path` with its steps, by kind: audited unary, unary, server-streaming, open, refused."""
    if handler.unary_unary is not None and is_audited(path):
        return _audited(path, handler, guard, record)
    if handler.unary_unary is not None:
        return _unary(path, handler, guard)
    if handler.unary_stream is not None:
        return _stream(path, handler, guard)
    if is_open(path):  # reflection: bidirectional, open to all
        return handler
    # A client-streaming or bidirectional method no policy covers: nobody may call it until one does.
    return _refused(path, handler)


def _method(path: str) -> str:
    """A method's name as metrics and the trail label it (`/pkg.Service/Method` -> `Method`)."""
    return path.rsplit("/", 1)[-1]


def _unary(path: str, handler: Any, guard: Guard) -> Any:
    """Admitted, then handled; metered; an error answered as its status."""
    meter = CallMeter(_method(path))
    inner = handler.unary_unary

    async def unary(request: Any, context: Ctx) -> Any:
        started = time.perf_counter()
        try:
            CALLER.set(admitted(guard, path, request, context))
            with caller_deadline(context.time_remaining()):  # answered UNAVAILABLE before the caller gives up
                response = await answered_in_time(inner(request, context))
        except grpc.aio.AbortError:  # the handler set its own status (health: NOT_FOUND for an unknown name)
            raise
        except Exception as e:
            code, message = status_of(e)
            meter.refused(code)
            await context.abort(code, message)
        meter.answered(started)
        return response

    return grpc.unary_unary_rpc_method_handler(unary, tolerant(handler.request_deserializer),
                                               handler.response_serializer)


def _stream(path: str, handler: Any, guard: Guard) -> Any:
    """Admitted, then streamed while the caller's credential stays valid; an error answered as its status; metered
    when it ends: OK, its error's status, or CANCELLED (the caller went away, or the server stopped)."""
    meter = CallMeter(_method(path))
    inner_stream = handler.unary_stream

    async def stream(request: Any, context: Ctx) -> AsyncIterator[Any]:
        started = time.perf_counter()
        code = grpc.StatusCode.CANCELLED  # unless it ends otherwise: cancelled, or closed unfinished
        try:
            identity = admitted(guard, path, request, context)
            CALLER.set(identity)
            # a stream ends when its caller's credential is revoked or expires (UNAUTHENTICATED)
            async for item in guard.while_valid(identity, inner_stream(request, context)):
                yield item
            code = grpc.StatusCode.OK
        except grpc.aio.AbortError:  # the handler set its own status
            code = context.code() or grpc.StatusCode.UNKNOWN
            raise
        except Exception as e:
            code, message = status_of(e)
            await context.abort(code, message)
        finally:
            meter.ended(code, started)

    return grpc.unary_stream_rpc_method_handler(stream, tolerant(handler.request_deserializer),
                                                handler.response_serializer)


def _audited(path: str, handler: Any, guard: Guard, record: Recorder) -> Any:
    """A unary administrative method's handler: as _unary's, and once the call is answered (OK or not, even
    refused), one row of the audit trail with the authenticated actor (admin_acts.ActWriter)."""
    method = _method(path)
    meter = CallMeter(method)
    acts = ActWriter(method, record)
    inner = handler.unary_unary

    async def unary(request: Any, context: Ctx) -> Any:
        started = time.perf_counter()
        identity: Identity | None = None
        try:
            identity = guard.caller(path, context)
            CALLER.set(authorized(guard, path, request, identity))
            with caller_deadline(context.time_remaining()):
                response = await answered_in_time(inner(request, context))
        except asyncio.CancelledError:
            await asyncio.shield(acts.write(request, identity, grpc.StatusCode.CANCELLED.name,
                                            "the call was cancelled"))
            raise
        except Exception as e:
            code, message = status_of(e)
            meter.refused(code)
            await acts.write(request, identity, code.name, message)
            await context.abort(code, message)
        meter.answered(started)
        await acts.write(request, identity, grpc.StatusCode.OK.name, "")
        return response

    return grpc.unary_unary_rpc_method_handler(unary, tolerant(handler.request_deserializer),
                                               handler.response_serializer)


def _refused(path: str, handler: Any) -> Any:
    """A client-streaming or bidirectional method no policy covers: PERMISSION_DENIED to everyone."""
    async def refuse(request: Any, context: Ctx) -> Any:
        await context.abort(grpc.StatusCode.PERMISSION_DENIED, f"{path} is in no access policy")

    if handler.stream_unary is not None:
        return grpc.stream_unary_rpc_method_handler(refuse, handler.request_deserializer,
                                                    handler.response_serializer)
    return grpc.stream_stream_rpc_method_handler(refuse, handler.request_deserializer, handler.response_serializer)
