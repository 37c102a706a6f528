"""MCP Roots: what the client says it is working on narrows what this session may touch.

Policy (README, "Roots"):
- The command-line directories are the ceiling. A client root inside one of them narrows to that root; a
  client root that contains one narrows to the command-line directory (the intersection); a client root
  that shares nothing with them is ignored, unless the server was started with `--allow-roots-outside`,
  which lets client roots stand as given.
- A client that declares no roots capability, answers with an empty list, or does not answer in time, keeps
  the command-line directories. A client whose roots are all unusable (not file://, not an existing
  directory, a %00 in the URI) gets no directory at all: failing closed, with a note saying why. A client
  whose roots all lie outside gets no directory at all (its roots said "only there", and "there" is not
  allowed): every call is refused, naming the reason.
- The server asks `roots/list` before the first call that touches the filesystem, and again after each
  `notifications/roots/list_changed`. It asks on the calling request's own stream, so it works over stdio
  and Streamable HTTP alike. 2026-07-28 clients have no roots capability (SEP-2577): the command line rules.
"""

from __future__ import annotations

import asyncio
import logging
import os
import warnings
import weakref
from typing import Any
from urllib.parse import unquote, urlsplit

import mcp_types
from mcp.server.connection import Connection
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_server_filesystem.sandbox import Sandbox

__all__ = ["ClientRoots", "narrow_roots", "root_paths"]

logger = logging.getLogger(__name__)

ROOTS_TIMEOUT_S = 10.0


def root_paths(roots: list[mcp_types.Root]) -> list[str]:
    """Real paths of the client's file:// roots that exist as directories; anything else is dropped."""
    paths = []
    for root in roots:
        parts = urlsplit(str(root.uri))
        if parts.scheme != "file" or parts.netloc not in ("", "localhost"):
            continue
        path = unquote(parts.path)
        if "\x00" in path:
            continue  # %00 names nothing: this root is unusable, the others still count
        try:
            path = os.path.realpath(path)
        except (OSError, ValueError):
            continue
        if os.path.isdir(path):
            paths.append(path)
    return paths


def _inside(path: str, root: str) -> bool:
    return root == "/" or path == root or path.startswith(root + os.sep)


def narrow_roots(allowed: tuple[str, ...], client: list[str], *, allow_outside: bool) -> list[str]:
    """The effective roots of a session whose client named `client` (real paths)."""
    if allow_outside:
        return list(dict.fromkeys(client))
    effective: list[str] = []
    for path in client:
        for root in allowed:
            if _inside(path, root):
                effective.append(path)
            elif _inside(root, path):
                effective.append(root)
    return list(dict.fromkeys(effective))


class _Session:
    def __init__(self) -> None:
        self.stale = True
        self.sandbox: Sandbox | None = None
        self.lock = asyncio.Lock()


class ClientRoots:
    """The effective sandbox of each connection, refreshed from the client's roots when they change."""

    def __init__(self, base: Sandbox, *, allow_outside: bool) -> None:
        self.base = base
        self.allow_outside = allow_outside
        self._sessions: weakref.WeakKeyDictionary[Connection, _Session] = weakref.WeakKeyDictionary()
        self.fetches = 0
        """roots/list requests sent so far (tests read it)."""

    async def middleware(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """SDK middleware: a roots/list_changed notification makes the next call ask again."""
        if ctx.method == "notifications/roots/list_changed" and ctx.request_id is None:
            self._session(ctx.session._connection).stale = True
        return await call_next(ctx)

    def _session(self, connection: Connection) -> _Session:
        state = self._sessions.get(connection)
        if state is None:
            state = self._sessions[connection] = _Session()
        return state

    async def sandbox(self, session: Any, request_id: Any) -> Sandbox:
        """The sandbox for a request on `session` (an SDK ServerSession)."""
        if session is None:
            return self.base
        if session.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return self.base
        capabilities = session.client_capabilities
        if capabilities is None or capabilities.roots is None:
            return self.base
        state = self._session(session._connection)
        async with state.lock:
            if state.stale or state.sandbox is None:
                state.sandbox = await self._fetch(session, request_id)
                state.stale = False
            return state.sandbox

    async def _fetch(self, session: Any, request_id: Any) -> Sandbox:
        self.fetches += 1
        metadata = ServerMessageMetadata(related_request_id=request_id) if request_id is not None else None
        try:
            with warnings.catch_warnings():
                # Deprecated for 2026-07-28 clients (SEP-2577); current in this client's era.
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                result = await asyncio.wait_for(
                    session.send_request(mcp_types.ListRootsRequest(), mcp_types.ListRootsResult, metadata=metadata),
                    ROOTS_TIMEOUT_S,
                )
        except Exception as exc:
            logger.warning("roots/list failed (%s); keeping the command-line directories", type(exc).__name__)
            return self.base
        given = list(result.roots)
        if not given:
            return self.base  # an empty list expresses no preference
        client = root_paths(given)
        if not client:
            # Closed, not open: roots the client meant as "only there" must not widen to every directory.
            logger.warning("none of the client's %d roots is usable; nothing is allowed in this session", len(given))
            return Sandbox(
                [],
                client_roots=[],
                note=(
                    f"No directory is allowed in this session: none of the client's {len(given)} roots is usable "
                    "(each must be a file:// URI of an existing directory, without %00); fix the client's roots."
                ),
            )
        effective = narrow_roots(self.base.roots, client, allow_outside=self.allow_outside)
        if not effective:
            logger.warning("the client's roots %s share nothing with the allowed directories", client)
        return Sandbox(effective, client_roots=client)
