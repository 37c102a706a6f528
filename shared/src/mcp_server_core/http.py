"""Streamable HTTP: loopback by default, Origin and Host checked, bearer tokens required beyond loopback.

- Host and Origin are validated on every request (DNS-rebinding protection, spec "Security Warning" of the
  Streamable HTTP transport): loopback names always pass, others only when listed in `allowed_hosts` /
  `allowed_origins`.
- Bound to anything but loopback, the server refuses to start without a bearer token (static or JWT, see
  `auth.py`); tokens are compared in constant time and never logged.
- Every POST body is bounded by `max_body_bytes`: a declared Content-Length over it, or a streamed body that
  grows past it, gets 413 with a JSON-RPC error before more is read. A body that is not one JSON-RPC message
  gets the same -32700 / -32600 answer as on stdio (the SDK would call a batch "invalid params" and silently
  take `"id": true` for a notification it never answers).
- `stateless` serves every POST on its own, with no session, so several workers can share a port.
- `resumable` keeps each session's SSE events in a bounded in-memory store, so a client whose stream dropped
  (or that a tool sent away with `ctx.close_sse_stream()`) reconnects with Last-Event-ID and misses nothing.
"""

from __future__ import annotations

import logging

from fastmcp.server.auth import AuthProvider
from fastmcp.server.event_store import EventStore
from key_value.aio.stores.memory import MemoryStore
from mcp_types import INVALID_REQUEST, JSONRPCError
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcp_server_core.auth import BearerTokens, auth_provider
from mcp_server_core.auth import is_loopback_host as is_loopback
from mcp_server_core.health import add_health_routes
from mcp_server_core.jsonrpc import MessageRefused, error_message, read_message
from mcp_server_core.metrics import add_metrics_route
from mcp_server_core.server import ReferenceServer
from mcp_server_core.settings import ServerSettings

__all__ = [
    "BearerTokens",
    "RequestGuard",
    "build_http_app",
    "check_http_settings",
    "is_loopback",
    "memory_event_store",
    "requests_in_flight",
]

logger = logging.getLogger(__name__)

MAX_STORED_EVENTS = 10_000
"""Events kept for replay across all sessions; the least recently used go first."""
MAX_EVENTS_PER_STREAM = 100
EVENT_TTL_SECONDS = 600


def memory_event_store(
    *,
    max_events: int = MAX_STORED_EVENTS,
    max_events_per_stream: int = MAX_EVENTS_PER_STREAM,
    ttl_seconds: int = EVENT_TTL_SECONDS,
) -> EventStore:
    """fastmcp's event store on an in-memory LRU capped at `max_events` events (and as many stream indexes).

    fastmcp scopes it per session, trims each stream to `max_events_per_stream` and expires events after
    `ttl_seconds`; the cap bounds what sessions that never come back can leave behind.
    """
    return EventStore(
        storage=MemoryStore(max_entries_per_collection=max_events),
        max_events_per_stream=max_events_per_stream,
        ttl=ttl_seconds,
    )


_in_flight = [0]


def requests_in_flight() -> int:
    """POSTs this process is still answering (the graceful shutdown waits for them)."""
    return _in_flight[0]


class RequestGuard:
    """Reads each request body with a byte cap, and answers a body that is no JSON-RPC message itself."""

    def __init__(self, app: ASGIApp, *, path: str, max_body_bytes: int) -> None:
        self.app = app
        self.path = path.rstrip("/") or "/"
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS", "DELETE"):
            await self.app(scope, receive, send)
            return
        user = scope.get("user")
        if user is not None and not user.is_authenticated:
            # The route answers 401 without reading the body: an anonymous client cannot make us read it.
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        declared = headers.get(b"content-length", b"").strip()
        if declared.isdigit() and int(declared) > self.max_body_bytes:
            await self._too_large(send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                await self._too_large(send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        on_endpoint = (scope["path"].rstrip("/") or "/") == self.path
        content_type = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
        if on_endpoint and content_type == b"application/json":
            try:
                read_message(body)
            except MessageRefused as refused:
                await _send_error(send, 400, refused.error)
                return

        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()  # after the body: the disconnect a streaming response listens for
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        _in_flight[0] += 1
        try:
            await self.app(scope, replay, send)
        finally:
            _in_flight[0] -= 1

    async def _too_large(self, send: Send) -> None:
        message = (
            f"Invalid Request: the body exceeds {self.max_body_bytes:,} bytes; send less (the server's "
            "max_body_bytes setting)."
        )
        await _send_error(send, 413, error_message(None, INVALID_REQUEST, message), close=True)


async def _send_error(send: Send, status: int, error: JSONRPCError, *, close: bool = False) -> None:
    body = error.model_dump_json(by_alias=True, exclude_unset=True).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if close:  # the rest of the body was never read: the connection cannot carry another request
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def check_http_settings(settings: ServerSettings) -> AuthProvider | None:
    """The auth provider `settings` ask for; ValueError for what must not serve: beyond loopback, no auth."""
    auth = auth_provider(settings)
    if not is_loopback(settings.host) and auth is None:
        raise ValueError(
            f"refusing to serve HTTP on {settings.host} without a bearer token: anyone who can reach the port "
            "could call every tool. Set an auth token or a JWT key (see --help), or bind to 127.0.0.1."
        )
    return auth


def build_http_app(server: ReferenceServer, settings: ServerSettings) -> Starlette:
    """The ASGI app serving `server` at `settings.path`; raises ValueError for an unsafe configuration."""
    auth = check_http_settings(settings)
    if auth is not None:
        server.auth = auth
    if settings.stateless:
        server.without_sessions()
    add_health_routes(server)
    add_metrics_route(server)
    return server.http_app(
        path=settings.path,
        stateless_http=settings.stateless,
        # A stateless POST has no standalone stream to come back on: answer in the response body.
        json_response=settings.stateless,
        event_store=memory_event_store() if settings.resumable else None,
        retry_interval=settings.sse_retry_ms if settings.resumable else None,
        host_origin_protection=True,
        allowed_hosts=settings.allowed_hosts or None,
        allowed_origins=settings.allowed_origins or None,
        middleware=[Middleware(RequestGuard, path=settings.path, max_body_bytes=settings.max_body_bytes)],
    )
