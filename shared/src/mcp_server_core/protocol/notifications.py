"""list_changed and resources/updated notifications, driven by real events, debounced and coalesced.

Domain code says *what* changed (`hub.tools_changed()`, `hub.resource_updated(uri)`); the hub decides who
hears it. Handshake-era clients (2024-11-05 .. 2025-11-25) hear it on their connection's standalone channel
(stdio, or the GET stream of Streamable HTTP); `resources/updated` only for URIs they subscribed to.
2026-07-28 clients hear it on the `subscriptions/listen` streams they opened, through the SDK's bus.
A burst of changes inside the debounce window sends one notification of each kind.

A change that concerns one principal only (a toolset it switched on for itself: toolsets.py) goes to that
principal's listen streams alone (`tools_changed_for`), on this host and, with `--state-url`, on every host
(Redis pub/sub; operations/state.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import weakref
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio.lowlevel
from mcp.server.connection import Connection
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.session import ServerSession
from mcp.server.subscriptions import (
    ListenHandler,
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    ToolsListChanged,
)
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    EmptyResult,
    SubscribeRequestParams,
    SubscriptionsListenRequestParams,
    SubscriptionsListenResult,
    UnsubscribeRequestParams,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

if TYPE_CHECKING:
    from mcp_server_core.operations.state import SharedState

__all__ = ["ChangeHub", "listening_scope"]

logger = logging.getLogger(__name__)

_KINDS = ("tools", "resources", "prompts")
MAX_SUBSCRIPTIONS = 1_000
"""URIs one client may subscribe to at once (resources/subscribe), or name in one subscriptions/listen: each is
memory kept for the session and, with a file watcher, a path watched; any URI a template matches is accepted."""


def _too_many(count: int) -> MCPError:
    return MCPError(
        code=INVALID_PARAMS,
        message=f"At most {MAX_SUBSCRIPTIONS:,} resource subscriptions per client ({count:,} asked); "
        "unsubscribe from some first, or subscribe to a resource that covers several.",
    )


_LISTENING_SCOPE: contextvars.ContextVar[str | None] = contextvars.ContextVar("listening_scope", default=None)


def listening_scope() -> str:
    """Whose choices the current request sees: fastmcp's per-principal scope of the 2026-07-28 era (the key its
    visibility rules live under), `user:<digest of the principal>`, or `process` where no one is authenticated."""
    from fastmcp.server.sessions import _principal_segment, current_principal

    principal = current_principal()
    return f"user:{_principal_segment(principal)}" if principal is not None else "process"


class _ScopedBus:
    """The SDK's in-process bus, where each listener also belongs to a scope (its stream's principal), so that an
    event meant for one principal reaches only its streams."""

    def __init__(self) -> None:
        self._listeners: dict[object, tuple[str | None, Callable[[ServerEvent], None]]] = {}

    async def publish(self, event: ServerEvent) -> None:
        self._deliver(None, event)
        await anyio.lowlevel.checkpoint()  # as the SDK's bus: listen streams drain between a burst's events

    def publish_to(self, scope: str, event: ServerEvent) -> int:
        """Deliver to the listeners of `scope` only; how many there were."""
        return self._deliver(scope, event)

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        token = object()
        self._listeners[token] = (_LISTENING_SCOPE.get(), listener)

        def unsubscribe() -> None:
            self._listeners.pop(token, None)

        return unsubscribe

    def _deliver(self, scope: str | None, event: ServerEvent) -> int:
        reached = 0
        for owner, listener in list(self._listeners.values()):
            if scope is not None and owner != scope:
                continue
            try:
                listener(event)
                reached += 1
            except Exception:  # one bad listener must not keep the event from the others
                logger.exception("subscription listener raised; continuing")
        return reached


class ChangeHub:
    """Fans change events out to every connected client, once per debounce window.

    Its methods may be called from any thread; delivery happens on the server's event loop.
    """

    def __init__(self, *, debounce: float = 0.05) -> None:
        self.debounce = debounce
        # Keyed by the SDK connection (one per client, outliving its requests); weak so a client that went away
        # without a clean close costs nothing.
        self._sessions: weakref.WeakKeyDictionary[Connection, ServerSession] = weakref.WeakKeyDictionary()
        self._subscriptions: weakref.WeakKeyDictionary[Connection, set[str]] = weakref.WeakKeyDictionary()
        self.bus = _ScopedBus()
        self._listen = ListenHandler(self.bus)
        self.shared: SharedState | None = None
        """With `--state-url`: where per-principal changes go so that the principal's streams on other hosts hear."""
        self._listened: Counter[str] = Counter()  # URIs open subscriptions/listen streams asked to hear about
        self._pending_kinds: set[str] = set()
        self._pending_uris: set[str] = set()
        self._flush_handle: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.sent: int = 0
        """Notifications sent so far (each kind to each client counts once); tests and benchmarks read it."""

    # --- what domain code calls ----------------------------------------------------------------------------

    def tools_changed(self) -> None:
        self._mark("tools")

    async def tools_changed_for(self, scope: str) -> None:
        """The tools one principal sees changed (`listening_scope()` names it): its listen streams hear
        tools/list_changed, here and on every other host sharing the state store; nobody else's do."""
        self.bus.publish_to(scope, ToolsListChanged())
        if self.shared is not None:
            await self.shared.publish({"kind": "tools", "scope": scope})

    def announced(self, message: dict[str, Any]) -> None:
        """Another host's `tools_changed_for` (from the state store's channel)."""
        scope = message.get("scope")
        if message.get("kind") == "tools" and isinstance(scope, str):
            self.bus.publish_to(scope, ToolsListChanged())

    def resources_changed(self) -> None:
        self._mark("resources")

    def prompts_changed(self) -> None:
        self._mark("prompts")

    def resource_updated(self, uri: str) -> None:
        self._mark(None, uri)

    async def flush(self) -> None:
        """Send what is pending now, without waiting for the debounce window (shutdown, tests)."""
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        kinds, uris = self._pending_kinds, self._pending_uris
        self._pending_kinds, self._pending_uris = set(), set()
        for kind in sorted(kinds):
            await self._send_kind(kind)
        for uri in sorted(uris):
            await self._send_updated(uri)

    @property
    def subscribed_uris(self) -> set[str]:
        """Every URI some client subscribed to, in either era: what a watcher must keep an eye on."""
        handshake = set().union(*self._subscriptions.values()) if self._subscriptions else set()
        return handshake | set(self._listened)

    async def listen_handler(
        self, ctx: ServerRequestContext[Any, Any], params: SubscriptionsListenRequestParams
    ) -> SubscriptionsListenResult:
        """`subscriptions/listen` (2026-07-28): the SDK's stream, with its URIs known to watchers while it is open.

        Without this a watcher that looks only at `subscribed_uris` never watched a modern client's files, and the
        acknowledged stream stayed silent while they changed.
        """
        uris = list(dict.fromkeys(params.notifications.resource_subscriptions or ()))
        if len(uris) > MAX_SUBSCRIPTIONS:
            raise _too_many(len(uris))
        self._listened.update(uris)
        scope = _LISTENING_SCOPE.set(listening_scope())  # the bus files this stream's listener under its principal
        try:
            return await self._listen(ctx, params)
        finally:
            _LISTENING_SCOPE.reset(scope)
            self._listened.subtract(uris)
            for uri in uris:
                if self._listened[uri] <= 0:
                    del self._listened[uri]

    def end_listen_streams(self) -> None:
        """End every open `subscriptions/listen` stream gracefully (its final result frame): the server stops."""
        self._listen.close()

    # --- wiring into the SDK server (done by ReferenceServer) ------------------------------------------------

    async def track(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """SDK server middleware: remember each handshake-era connection so change events can reach it."""
        if self._loop is None:
            self._remember_loop()  # the loop change events from worker threads are handed to
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            # The SDK keeps the per-client Connection private to the session; it is the only object that
            # identifies one client across its requests, so the hub keys on it.
            connection: Connection = ctx.session._connection
            if connection not in self._sessions:
                self._sessions[connection] = ctx.session
        return await call_next(ctx)

    async def on_subscribe(self, ctx: ServerRequestContext[Any, Any], params: SubscribeRequestParams) -> EmptyResult:
        held = self._subscriptions.setdefault(ctx.session._connection, set())
        uri = str(params.uri)
        if uri not in held and len(held) >= MAX_SUBSCRIPTIONS:
            raise _too_many(len(held) + 1)
        held.add(uri)
        return EmptyResult()

    async def on_unsubscribe(
        self, ctx: ServerRequestContext[Any, Any], params: UnsubscribeRequestParams
    ) -> EmptyResult:
        self._subscriptions.get(ctx.session._connection, set()).discard(str(params.uri))
        return EmptyResult()

    # --- internals -------------------------------------------------------------------------------------------

    def _remember_loop(self) -> None:
        with contextlib.suppress(RuntimeError):
            self._loop = asyncio.get_running_loop()

    def _mark(self, kind: str | None, uri: str | None = None) -> None:
        # Callable from any thread: sync tools run in worker threads, file watchers and pollers in their own.
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            if self._loop is not None and not self._loop.is_closed():
                self._loop.call_soon_threadsafe(self._mark, kind, uri)
            return  # no loop known yet: nothing is serving, so no client can hold a stale list
        if kind is not None:
            if kind not in _KINDS:
                raise ValueError(f"unknown change kind {kind!r}; expected one of {_KINDS}")
            self._pending_kinds.add(kind)
        if uri is not None:
            self._pending_uris.add(uri)
        self._loop = loop
        if self._flush_handle is None:
            self._flush_handle = loop.call_later(self.debounce, self._start_flush)

    def _start_flush(self) -> None:
        self._flush_handle = None
        task = asyncio.get_running_loop().create_task(self.flush())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send_kind(self, kind: str) -> None:
        event: ServerEvent
        if kind == "tools":
            event = ToolsListChanged()
        elif kind == "resources":
            event = ResourcesListChanged()
        else:
            event = PromptsListChanged()
        await self.bus.publish(event)
        for session in list(self._sessions.values()):
            if kind == "tools":
                await self._deliver(session.send_tool_list_changed())
            elif kind == "resources":
                await self._deliver(session.send_resource_list_changed())
            else:
                await self._deliver(session.send_prompt_list_changed())

    async def _send_updated(self, uri: str) -> None:
        await self.bus.publish(ResourceUpdated(uri=uri))
        for connection, uris in list(self._subscriptions.items()):
            session = self._sessions.get(connection)
            if session is not None and uri in uris:
                await self._deliver(session.send_resource_updated(uri))

    async def _deliver(self, sending: Any) -> None:
        # Notifications are advisory: a client that left must not stop the others from hearing it.
        try:
            await sending
            self.sent += 1
        except Exception:
            logger.debug("a change notification could not be delivered", exc_info=True)
