"""Streamable HTTP: loopback by default, Origin and Host checked, bearer tokens required beyond loopback.

- Host and Origin are validated on every request (DNS-rebinding protection, spec "Security Warning" of the
  Streamable HTTP transport): loopback names always pass, others only when listed in `allowed_hosts` /
  `allowed_origins`.
- Bound to anything but loopback, the server refuses to start without a bearer token (static or JWT, see
  `auth.py`); tokens are compared in constant time and never logged.
- Every POST body is bounded by `max_body_bytes`: a declared Content-Length over it, or a streamed body that
  grows past it, gets 413 with a JSON-RPC error before more is read. A body that is not one JSON-RPC message
  gets the same -32700 / -32600 answer as on stdio (the SDK would call a batch "invalid params" and silently
  take `"id": true` for a notification it never answers), whatever its Content-Type says; so does one too costly
  to build (more objects, arrays or values than its size allows, counted before parsing: jsonrpc.py). The body
  is handed on, not kept, and the SDK's own buffering body cap is out of the path: one copy lives per request.
- Each credential gets a share of what all clients share, so one cannot lock the others out: a quarter of the
  body-byte budget and of `max_connections` (its requests in flight), and `max_sessions_per_client` sessions,
  counted from the moment an initialize arrives.
- `stateless` serves every POST on its own, with no session, so several workers can share a port.
- `resumable` keeps each session's SSE events in a bounded in-memory store, so a client whose stream dropped
  (or that a tool sent away with `ctx.close_sse_stream()`) reconnects with Last-Event-ID and misses nothing.
- With `state_url` (Redis) the events live there, so a client resumes on any host: a host that holds its
  session serves the resumed stream live; a host that does not (its own host died or was replaced) replays what
  the store holds after Last-Event-ID and ends the stream, if the session was opened with the same credential.
  The session itself stays on its host (requests after the replay need affinity: docs/deploy.md).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import time
from typing import Any

import anyio
from fastmcp.server.auth import AuthProvider
from fastmcp.server.event_store import EventStore
from key_value.aio.stores.memory import MemoryStore
from mcp_types import INVALID_REQUEST, JSONRPCError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.middleware import Middleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcp_server_core.auth.tokens import BearerTokens, auth_provider
from mcp_server_core.auth.tokens import is_loopback_host as is_loopback
from mcp_server_core.conventions.settings import ServerSettings
from mcp_server_core.operations.health import add_health_routes
from mcp_server_core.operations.metrics import add_metrics_route, call_metrics, record_auth_failure
from mcp_server_core.operations.state import SharedState, StateUnavailable
from mcp_server_core.protocol.flows import FLOW_TTL_S, SharedFlowStore
from mcp_server_core.protocol.server import ReferenceServer
from mcp_server_core.transport.jsonrpc import MessageRefused, error_message, read_message

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
    shared: SharedState | None = None,
) -> EventStore:
    """fastmcp's event store on an in-memory LRU capped at `max_events` events (and as many stream indexes), or,
    when `shared` names a state store, in Redis with that LRU as its fallback while Redis is away.

    fastmcp scopes it per session, trims each stream to `max_events_per_stream` and expires events after
    `ttl_seconds`; the cap bounds what sessions that never come back can leave behind.
    """
    memory = MemoryStore(max_entries_per_collection=max_events)
    return EventStore(
        storage=shared.key_value(memory) if shared is not None else memory,
        max_events_per_stream=max_events_per_stream,
        ttl=ttl_seconds,
    )


OWNER_REFRESH_S = 60.0
"""How often a session's owner record in the state store is renewed while the session is used."""


def _session_digest(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()


def _owner_key(prefix: str, session_id: str) -> str:
    return f"{prefix}session-owner:{_session_digest(session_id)}"


def _sessions_key(prefix: str, owner: str) -> str:
    return f"{prefix}sessions:{owner}"


async def _record_session(client: Any, prefix: str, session_id: str, record: str, keep_s: int, count_s: int) -> None:
    """Who opened the session and where its streams' events are (`record`, kept `keep_s`, for resuming them
    elsewhere), and that it counts among its owner's sessions until `count_s` after this renewal (a host that died
    stops renewing it)."""
    owner = json.loads(record)[0]
    async with client.pipeline(transaction=False) as pipe:
        pipe.set(_owner_key(prefix, session_id), record, ex=keep_s)
        pipe.zadd(_sessions_key(prefix, owner), {_session_digest(session_id): time.time() + count_s})
        pipe.expire(_sessions_key(prefix, owner), count_s)
        await pipe.execute()


def _owner_digest(credential: _Credential | None) -> str:
    """Who opened a session, as the state store keeps it: a digest, never the credential."""
    return hashlib.sha256(json.dumps(credential).encode()).hexdigest()


_in_flight = [0]


class _Budget:
    """Request-body bytes held at once across every request of this process, and by each credential."""

    def __init__(self) -> None:
        self.held = 0
        self.held_by: dict[object, int] = {}

    def take(self, size: int, limit: int, *, holder: object = None, share: int | None = None) -> bool:
        mine = self.held_by.get(holder, 0)
        if self.held + size > limit or (share is not None and mine + size > share):
            return False
        self.held += size
        self.held_by[holder] = mine + size
        return True

    def give(self, size: int, *, holder: object = None) -> None:
        self.held = max(self.held - size, 0)
        left = self.held_by.get(holder, 0) - size
        if left > 0:
            self.held_by[holder] = left
        else:
            self.held_by.pop(holder, None)


_buffered = _Budget()


_Credential = tuple[str, str | None, str | None]


def _as_credential(owner: Any) -> _Credential:
    """The SDK's session owner (a dict: client id, issuer, subject) as a key."""
    return owner["client_id"], owner["issuer"], owner["subject"]


def _credential(scope: Scope) -> _Credential | None:
    """Whom the SDK would say owns a session this request opens; None when auth tells no clients apart."""
    from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, authorization_context

    user = scope.get("user")
    if not isinstance(user, AuthenticatedUser):
        return None  # without auth only the total cap (max_sessions) applies
    return _as_credential(authorization_context(user))


class _Counts:
    """Requests in some state, per credential (None, no credential, is not counted)."""

    def __init__(self) -> None:
        self._counts: dict[_Credential, int] = {}

    def of(self, credential: _Credential) -> int:
        return self._counts.get(credential, 0)

    def add(self, credential: _Credential | None) -> None:
        if credential is not None:
            self._counts[credential] = self._counts.get(credential, 0) + 1

    def remove(self, credential: _Credential | None) -> None:
        if credential is not None:
            left = self._counts.pop(credential) - 1
            if left:
                self._counts[credential] = left


def _may_open_a_session(scope: Scope) -> bool:
    """Whether the SDK would open a session for this request: no session named, and the handshake era (it sends
    a request whose first MCP-Protocol-Version names any other version to the sessionless 2026 era)."""
    if any(name == b"mcp-session-id" for name, _ in scope["headers"]):
        return False
    version = next((value for name, value in scope["headers"] if name == b"mcp-protocol-version"), None)
    return version is None or version.decode("latin-1") in HANDSHAKE_PROTOCOL_VERSIONS


def requests_in_flight() -> int:
    """POSTs this process is still answering (the graceful shutdown waits for them)."""
    return _in_flight[0]


class RequestGuard:
    """Reads each request body within a byte cap, a deadline and a process-wide budget, and answers a body that is
    no JSON-RPC message itself; opens a session only within the caller's share (see the module docstring)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        path: str,
        settings: ServerSettings,
        shared: SharedState | None = None,
        events: EventStore | None = None,
    ) -> None:
        self.app = app
        self.shared = shared if shared is not None and shared.shared else None
        self.events = events
        self._owners_written: dict[str, float] = {}  # session id -> when its owner record was last written
        self.path = path.rstrip("/") or "/"
        self.settings = settings
        self.max_body_bytes = settings.max_body_bytes
        self._manager: Any = None
        # Session-opening requests admitted but not yet answered, per credential: the SDK registers a session
        # only once the body is read, so without these, initializes sent together all passed the cap and one
        # credential took every session there was.
        self._opening = _Counts()
        # Requests in flight, per credential, from the first byte of their body to the end of their answer: each
        # holds a connection the front cannot close for room, so one credential's slow bodies, or its 2026-era
        # listen streams (open as long as it likes), filled --max-connections and locked every other client out.
        # A credential may hold a quarter of the connections this way (its GET streams are one per session).
        self._in_flight = _Counts()
        self._in_flight_share = max(settings.max_connections // 4, 1)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        user = scope.get("user")
        if user is not None and not user.is_authenticated:
            # The route answers 401 without reading the body: an anonymous client cannot make us read it.
            await self.app(scope, receive, send)
            return
        on_endpoint = (scope["path"].rstrip("/") or "/") == self.path
        if self.shared is not None and on_endpoint:
            if scope["method"] == "GET" and await self._replayed_from_the_store(scope, send):
                return
            ending = scope["method"] == "DELETE"
            send = self._forgetting(scope, send) if ending else self._recording_owners(scope, send)
        if scope["method"] in ("GET", "HEAD", "OPTIONS", "DELETE"):
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        opening = None  # the credential this request may open a session for, counted until it is answered
        if on_endpoint and not self.settings.stateless and _may_open_a_session(scope):
            manager = self._session_manager(scope)
            if manager is not None:
                opening = _credential(scope)
                if opening is not None and not await self._room_for_a_session(manager, opening, send):
                    return
        declared = headers.get(b"content-length", b"").strip()
        if declared.isdigit() and int(declared) > self.max_body_bytes:
            await self._too_large(send)
            return
        holder = _credential(scope)
        if holder is not None and self._in_flight.of(holder) >= self._in_flight_share:
            message = (
                f"This client has {self._in_flight.of(holder)} requests in flight (the most one client may, a "
                "quarter of max_connections); wait for some to be answered, or close streams it no longer reads."
            )
            await _send_error(send, 503, error_message(None, INVALID_REQUEST, message), close=True, retry_after=1)
            return
        held = [0]  # bytes of this request counted in the process-wide budget, given back once it is answered
        self._opening.add(opening)
        self._in_flight.add(holder)
        try:
            body = await self._read_body(receive, send, held, holder)
            if body is None:
                return
            # Handed over, not kept: the app's copy is the one that lives while the request is served.
            handed = [body]
            del body
            await self._forward(scope, receive, send, handed, on_endpoint)
        finally:
            _buffered.give(held[0], holder=holder)
            self._opening.remove(opening)
            self._in_flight.remove(holder)

    async def _forward(
        self, scope: Scope, receive: Receive, send: Send, handed: list[bytes], on_endpoint: bool
    ) -> None:
        # Every POST body is judged, whatever its Content-Type says: the readers behind disagree on what JSON is
        # (the handshake era takes any comma-separated part of the first header, the transport check any type
        # starting with application/json, the 2026 era reads the body regardless), and a guard that asked the
        # header itself let 8 MiB of `[{},...]` through to the SDK's parser past one spelling or another.
        if on_endpoint and scope["method"] == "POST":
            self._session_manager(scope)  # tuned before its first request, in either mode
            try:
                read_message(handed[0])  # refuses, before parsing, a body too costly to parse (jsonrpc.py)
            except MessageRefused as refused:
                await _send_error(send, 400, refused.error)
                return

        async def replay() -> Message:
            if not handed:
                return await receive()  # after the body: the disconnect a streaming response listens for
            # Given away: holding it too while the request is served would keep a second copy of every body.
            return {"type": "http.request", "body": handed.pop(), "more_body": False}

        _in_flight[0] += 1
        try:
            await self.app(scope, replay, send)
        finally:
            _in_flight[0] -= 1

    async def _read_body(
        self, receive: Receive, send: Send, held: list[int], holder: _Credential | None
    ) -> bytes | None:
        """The whole body, or None once a refusal was sent (too large, too slow, over the shared budget or over
        the caller's share of it)."""
        # A credential's bodies may hold a quarter of the budget (one whole body if that is more): without a
        # share, one credential's slow bodies held all of it and every other client got 503 until they ended.
        # Without auth nothing tells clients apart, and only the budget applies.
        share = max(self.max_body_bytes, self.settings.max_buffered_bytes // 4) if holder is not None else None
        chunks: list[bytes] = []
        size = 0
        try:
            with anyio.fail_after(self.settings.body_timeout_s):
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        return None
                    chunk = message.get("body", b"")
                    size += len(chunk)
                    if size > self.max_body_bytes:
                        await self._too_large(send)
                        return None
                    if not _buffered.take(len(chunk), self.settings.max_buffered_bytes, holder=holder, share=share):
                        await _send_error(
                            send,
                            503,
                            error_message(
                                None,
                                INVALID_REQUEST,
                                "The server is reading too many request bodies at once, from this client or from "
                                "all; retry shortly.",
                            ),
                            close=True,
                            retry_after=1,
                        )
                        return None
                    held[0] += len(chunk)
                    chunks.append(chunk)
                    if not message.get("more_body", False):
                        break
        except TimeoutError:
            message_text = f"Invalid Request: the body did not arrive within {self.settings.body_timeout_s:g} s."
            await _send_error(send, 408, error_message(None, INVALID_REQUEST, message_text), close=True)
            return None
        return b"".join(chunks)

    async def _replayed_from_the_store(self, scope: Scope, send: Send) -> bool:
        """A GET with Last-Event-ID for a session this host does not hold (its host died, or a gateway sent it
        here): the events the store holds after that id, then the end of the stream. False (and the SDK answers,
        404 for a session it does not know) when this host holds the session, the session was opened by another
        credential or is not known to the store, or the store does not answer."""
        headers = dict(scope["headers"])
        session_id = headers.get(b"mcp-session-id", b"").decode("latin-1")
        last_event_id = headers.get(b"last-event-id", b"").decode("latin-1")
        shared = self.shared
        if not session_id or not last_event_id or self.events is None or shared is None:
            return False
        manager = self._session_manager(scope)
        if manager is None or session_id in manager._server_instances:
            return False
        try:
            record = await shared.run(lambda client: client.get(_owner_key(shared.prefix, session_id)))
        except StateUnavailable:
            return False
        try:
            owner, streams = json.loads(record) if record else (None, None)
        except ValueError:
            return False
        if owner != _owner_digest(_credential(scope)) or not isinstance(streams, str) or not streams:
            return False  # as if the session did not exist: the SDK's 404
        replayed: list[bytes] = []

        async def keep(event: Any) -> None:
            message = event.message.model_dump_json(by_alias=True, exclude_unset=True)
            if len(replayed) < MAX_EVENTS_PER_STREAM:
                replayed.append(f"event: message\nid: {event.event_id}\ndata: {message}\n\n".encode())

        stream = await self.events.replay_events_after(last_event_id, keep)
        if stream is None or not stream.startswith(streams):
            return False  # an event of another session's streams: not this caller's to read
        logger.info("replayed %d stored events of a session another host held", len(replayed))
        head = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache, no-transform")]
        head.append((b"mcp-session-id", session_id.encode("latin-1")))
        await send({"type": "http.response.start", "status": 200, "headers": head})
        await send({"type": "http.response.body", "body": b"".join(replayed), "more_body": False})
        return True

    def _recording_owners(self, scope: Scope, send: Send) -> Send:
        """`send`, also writing to the store which credential opened the session the answer names (kept while
        the session is used, so another host can check who may resume its streams)."""
        owner = _owner_digest(_credential(scope))
        shared = self.shared
        assert shared is not None
        # The owner is kept as long as the session's events may be replayed; the count, as long as its host would
        # keep it idle (renewed every OWNER_REFRESH_S while it is used).
        keep_s = int(self.settings.session_idle_timeout_s) + EVENT_TTL_SECONDS
        count_s = int(self.settings.session_idle_timeout_s + OWNER_REFRESH_S)

        async def recording(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] < 300:
                session_id = dict(message.get("headers", [])).get(b"mcp-session-id", b"").decode("latin-1")
                now = time.monotonic()
                if session_id and now - self._owners_written.get(session_id, -1e9) > OWNER_REFRESH_S:
                    if len(self._owners_written) > 2 * self.settings.max_sessions:
                        self._owners_written.clear()  # bounded: the worst is one more write per session
                    self._owners_written[session_id] = now
                    record = json.dumps([owner, self._streams_of(session_id)])
                    try:
                        await shared.run(
                            lambda client: _record_session(client, shared.prefix, session_id, record, keep_s, count_s)
                        )
                    except StateUnavailable:
                        self._owners_written.pop(session_id, None)
            await send(message)

        return recording

    def _streams_of(self, session_id: str) -> str | None:
        """What the event store's stream ids of this host's session start with (fastmcp scopes each session's
        streams under a random prefix), so that another host replays that session's events and no other's."""
        transport = self._manager._server_instances.get(session_id) if self._manager is not None else None
        prefix = getattr(getattr(transport, "_event_store", None), "_stream_prefix", None)
        return prefix if isinstance(prefix, str) else None

    def _session_manager(self, scope: Scope) -> Any:
        """The SDK's session manager behind this app (made at startup), tuned to the settings on first use."""
        if self._manager is None:
            app = scope.get("app")
            for route in getattr(app, "routes", []):
                endpoint = getattr(route, "endpoint", None)
                target = getattr(endpoint, "app", endpoint)
                manager = getattr(target, "session_manager", None) or getattr(endpoint, "session_manager", None)
                if manager is not None:
                    manager.max_sessions = self.settings.max_sessions
                    # The SDK's own body cap (4 MiB, in stateless mode too) would answer a bare 413 under ours,
                    # and it copies every body twice more (a bytearray, then bytes) and holds both while the
                    # request is served. Ours is the limit, and has read the body already: the SDK's handler
                    # takes it as it is.
                    manager.asgi_app = manager._handle_request
                    self._manager = manager
                    break
        return self._manager

    def _forgetting(self, scope: Scope, send: Send) -> Send:
        """`send` for a DELETE: once the session has ended here, it stops counting on every host before the client
        hears so (a client that ends one session and at once opens another elsewhere was refused: the count was
        taken back only after the answer had gone)."""

        async def forgetting(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] < 300:
                await self._forget_session(scope)
            await send(message)

        return forgetting

    async def _forget_session(self, scope: Scope) -> None:
        """A session ended with DELETE no longer counts against its credential on any host."""
        session_id = dict(scope["headers"]).get(b"mcp-session-id", b"").decode("latin-1")
        if self.shared is None or not session_id:
            return
        self._owners_written.pop(session_id, None)
        key = _sessions_key(self.shared.prefix, _owner_digest(_credential(scope)))
        with contextlib.suppress(StateUnavailable):
            await self.shared.run(lambda client: client.zrem(key, _session_digest(session_id)))

    async def _sessions_elsewhere_too(self, credential: _Credential) -> int | None:
        """Sessions `credential` holds on every host (the state store's count), or None without one."""
        if self.shared is None:
            return None
        key = _sessions_key(self.shared.prefix, _owner_digest(credential))

        async def count(client: Any) -> int:
            await client.zremrangebyscore(key, "-inf", time.time())  # those whose host stopped renewing them
            return int(await client.zcard(key))

        try:
            return await self.shared.run(count)
        except StateUnavailable:
            return None

    async def _room_for_a_session(self, manager: Any, credential: _Credential, send: Send) -> bool:
        """A credential holds at most `max_sessions_per_client` sessions, those being opened included: past it,
        429 with Retry-After. With a state store, its sessions on every host count."""
        held = sum(1 for owner in list(manager._session_owners.values()) if _as_credential(owner) == credential)
        held = max(held, await self._sessions_elsewhere_too(credential) or 0)
        held += self._opening.of(credential)
        if held < self.settings.max_sessions_per_client:
            return True
        message = (
            f"Too many sessions: this client holds {held} (the most one client may, max_sessions_per_client); "
            "end one with DELETE, or reuse it."
        )
        await _send_error(send, 429, error_message(None, INVALID_REQUEST, message), retry_after=30)
        return False

    async def _too_large(self, send: Send) -> None:
        message = (
            f"Invalid Request: the body exceeds {self.max_body_bytes:,} bytes; send less (the server's "
            "max_body_bytes setting)."
        )
        await _send_error(send, 413, error_message(None, INVALID_REQUEST, message), close=True)


async def _send_error(
    send: Send, status: int, error: JSONRPCError, *, close: bool = False, retry_after: int | None = None
) -> None:
    body = error.model_dump_json(by_alias=True, exclude_unset=True).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if close:  # the rest of the body was never read: the connection cannot carry another request
        headers.append((b"connection", b"close"))
    if retry_after is not None:
        headers.append((b"retry-after", str(retry_after).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def check_http_settings(settings: ServerSettings) -> AuthProvider | None:
    """The auth provider `settings` ask for; ValueError for what must not serve: beyond loopback, no auth.

    A server whose callers are authenticated by its upstream (`verifies_callers_upstream`) brings its own
    provider (`ReferenceServer.auth`, set when it is built); None is returned for it here."""
    if settings.verifies_callers_upstream():
        return None
    auth = auth_provider(settings)
    if not is_loopback(settings.host) and auth is None:
        raise ValueError(
            f"refusing to serve HTTP on {settings.host} without a bearer token: anyone who can reach the port "
            "could call every tool. Set an auth token or a JWT key (see --help), or bind to 127.0.0.1."
        )
    return auth


MAX_AUTHORIZATION_BYTES = 8 * 1024


class HeaderGuard:
    """Before any route or token sees a request, headers a proxy and this server could read differently:
    - Content-Length beside Transfer-Encoding is 400 and the connection closes (RFC 9112 6.1). h11 goes by the
      chunks and kept the connection: what followed them was served as a request of its own, one a proxy going
      by the length had passed as body (a /healthz behind an anonymous POST was answered 200).
    - Two Authorization headers are 400 (which one counts is ambiguous), one over 8 KiB is 431, before any token
      is verified."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        names = {name for name, _ in scope["headers"]}
        if b"content-length" in names and b"transfer-encoding" in names:
            message = "Invalid Request: send Content-Length or Transfer-Encoding, not both."
            await _send_error(send, 400, error_message(None, INVALID_REQUEST, message), close=True)
            return
        values = [value for name, value in scope["headers"] if name == b"authorization"]
        if len(values) > 1:
            record_auth_failure("duplicate_header")
            message = "Invalid Request: send one Authorization header."
            await _send_error(send, 400, error_message(None, INVALID_REQUEST, message))
            return
        if values and len(values[0]) > MAX_AUTHORIZATION_BYTES:
            record_auth_failure("oversized_header")
            message = f"Invalid Request: the Authorization header is over {MAX_AUTHORIZATION_BYTES:,} bytes."
            await _send_error(send, 431, error_message(None, INVALID_REQUEST, message), close=True)
            return

        async def counting(message: Message) -> None:
            # The endpoint's refusals, by reason, for mcp_auth_failures_total (metrics.py).
            if message["type"] == "http.response.start" and message["status"] in (401, 403):
                challenge = dict(message.get("headers", [])).get(b"www-authenticate", b"")
                if message["status"] == 401:
                    record_auth_failure("invalid_token" if values else "missing_token")
                elif b"insufficient_scope" in challenge:
                    record_auth_failure("insufficient_scope")
            await send(message)

        await self.app(scope, receive, counting)


def build_http_app(server: ReferenceServer, settings: ServerSettings) -> ASGIApp:
    """The ASGI app serving `server` at `settings.path`; raises ValueError for an unsafe configuration."""
    auth = check_http_settings(settings)
    if auth is not None:
        server.auth = auth
    elif settings.verifies_callers_upstream() and server.auth is None:
        raise ValueError(f"{server.name} was built without the auth provider its upstream identity needs")
    if settings.stateless:
        # Toolset choices are then each principal's: callers need a credential (checked, so `server.auth`), and
        # every process serving them one store.
        per_principal = settings.keeps_choices_without_sessions() and server.auth is not None
        server.without_sessions(per_principal=per_principal)
    shared = _share_state(server, settings)
    add_health_routes(server, server.readiness)
    server.audit.metrics = call_metrics()
    add_metrics_route(server)
    events = memory_event_store(shared=shared if shared.shared else None) if settings.resumable else None
    app = server.http_app(
        path=settings.path,
        stateless_http=settings.stateless,
        # A stateless POST has no standalone stream to come back on: answer in the response body.
        json_response=settings.stateless,
        event_store=events,
        retry_interval=settings.sse_retry_ms if settings.resumable else None,
        host_origin_protection=True,
        allowed_hosts=settings.allowed_hosts or None,
        allowed_origins=settings.allowed_origins or None,
        middleware=[Middleware(RequestGuard, path=settings.path, settings=settings, shared=shared, events=events)],
        session_idle_timeout=settings.session_idle_timeout_s if not settings.stateless else None,
    )
    return HeaderGuard(app)


def _share_state(server: ReferenceServer, settings: ServerSettings) -> SharedState:
    """Point what the server keeps between requests at the state store `settings.state_url` names, if any."""
    shared = SharedState(settings.state_url, namespace=server.name)
    server.shared_state = shared
    if not shared.shared:
        return shared
    # fastmcp's state store holds each session's and each principal's visibility rules (toolset choices): in
    # Redis, a principal's choices made on one host are the ones every host serves.
    server._state_storage = shared.key_value(MemoryStore(max_entries_per_collection=MAX_STORED_EVENTS))
    server.changes.shared = shared
    # What each session or principal read, so a write on one host is asked about a read on another (flows.py).
    flows = server.flows.store = SharedFlowStore(shared, ttl_s=max(FLOW_TTL_S, settings.session_idle_timeout_s))
    server.run_in_background(flows.keep_sending)  # reads an outage kept here reach the other hosts soon after it
    # A 2026-07-28 client answers a confirmation in a second request, which any host may serve: it must be able
    # to open the request state the asking host sealed.
    sealing = shared.shared_secret("request-state")
    if sealing is not None:
        server.seal_request_state_with(sealing)
    else:
        logger.warning(
            "request state sealed with this host's own key: a 2026-07-28 answer to a confirmation must reach the "
            "host that asked (the state store did not answer at start)"
        )
    server.toolsets.register_all()
    shared.expose_metrics()

    async def state() -> str:
        await shared.check()
        return shared.describe()

    server.readiness.details["state"] = state

    async def hear_other_hosts() -> None:
        await shared.listen(server.changes.announced)

    server.run_in_background(hear_other_hosts)
    server.on_shutdown(shared.close)
    return shared
