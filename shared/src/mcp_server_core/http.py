"""Streamable HTTP: loopback by default, Origin and Host checked, bearer tokens required beyond loopback.

- Host and Origin are validated on every request (DNS-rebinding protection, spec "Security Warning" of the
  Streamable HTTP transport): loopback names always pass, others only when listed in `allowed_hosts` /
  `allowed_origins`.
- Bound to anything but loopback, the server refuses to start without a bearer token; tokens are compared in
  constant time and never logged.
- `stateless` serves every POST on its own, with no session, so several workers can share a port.
- `resumable` keeps each session's SSE events in a bounded in-memory store, so a client whose stream dropped
  (or that a tool sent away with `ctx.close_sse_stream()`) reconnects with Last-Event-ID and misses nothing.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging

from fastmcp.server.auth import AccessToken, TokenVerifier
from fastmcp.server.event_store import EventStore
from key_value.aio.stores.memory import MemoryStore
from starlette.applications import Starlette

from mcp_server_core.errors import register_secret
from mcp_server_core.server import ReferenceServer
from mcp_server_core.settings import ServerSettings

__all__ = ["BearerTokens", "build_http_app", "is_loopback", "memory_event_store"]

logger = logging.getLogger(__name__)

MAX_STORED_EVENTS = 10_000
"""Events kept for replay across all sessions; the least recently used go first."""
MAX_EVENTS_PER_STREAM = 100
EVENT_TTL_SECONDS = 600


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class BearerTokens(TokenVerifier):
    """Static bearer tokens, compared in constant time."""

    def __init__(self, tokens: list[str]) -> None:
        super().__init__()
        self._tokens = [token.encode() for token in tokens]
        for token in tokens:
            register_secret(token)

    async def verify_token(self, token: str) -> AccessToken | None:
        offered = token.encode()
        # Compare against every token, even after a match, so timing says nothing about which one matched.
        matched = False
        for known in self._tokens:
            matched |= hmac.compare_digest(offered, known)
        if not matched:
            return None
        return AccessToken(token=token, client_id="bearer", scopes=[])


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


def build_http_app(server: ReferenceServer, settings: ServerSettings) -> Starlette:
    """The ASGI app serving `server` at `settings.path`; raises ValueError for an unsafe configuration."""
    tokens = settings.bearer_tokens()
    if not is_loopback(settings.host) and not tokens:
        raise ValueError(
            f"refusing to serve HTTP on {settings.host} without a bearer token: anyone who can reach the port "
            "could call every tool. Set an auth token (see --help), or bind to 127.0.0.1."
        )
    if tokens:
        server.auth = BearerTokens(tokens)
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
    )
