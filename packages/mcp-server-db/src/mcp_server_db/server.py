"""Builds the database server from the helpers."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from mcp_server_core import ReferenceServer

from mcp_server_db import __version__
from mcp_server_db.prompts import add_prompts
from mcp_server_db.resources import SchemaResources
from mcp_server_db.roles import RoleMapFile, acting_as
from mcp_server_db.settings import DbSettings
from mcp_server_db.tools import analysis_toolset, query_toolset, schema_toolset, write_toolset

INSTRUCTIONS = (
    "A database inspector. find_objects, then describe_tables; run_query for one SELECT with params "
    "(EXPLAIN SELECT shows a plan)."
)
logger = logging.getLogger(__name__)


class _SetOnFirstMessageAfterInitialize(Middleware):
    """Sets `event` at the first message after initialize (`notifications/initialized`, or a 2026-07-28
    client's first request): the client has its answer, so the schema read that waits for it delays nothing
    the client waits for at start."""

    def __init__(self, event: asyncio.Event) -> None:
        self._event = event

    async def on_message(self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]) -> Any:
        if not self._event.is_set() and context.method not in ("initialize", "server/discover"):
            self._event.set()
        return await call_next(context)


class _ActAsCallerRole(Middleware):
    """Every request from a client acts as its caller's database role (`--role-map`, roles.py), or holds the
    caller's refusal, which its first connection raises; the audit line names the role beside the principal."""

    def __init__(self, role_map: RoleMapFile) -> None:
        self._role_map = role_map

    async def on_request(self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]) -> Any:
        from fastmcp.server.dependencies import get_access_token
        from mcp_server_core.auth.identity import principal
        from mcp_server_core.operations.audit import audit_acting_as

        token = get_access_token()
        with acting_as(self._role_map.current(), principal(token), (token.claims if token else None) or {}) as role:
            if role is not None:
                audit_acting_as(f"role:{role}")
            return await call_next(context)


def build_server(settings: DbSettings) -> ReferenceServer:
    db = open_database(settings)
    writes = settings.allow_write and not settings.read_only
    toolsets = [schema_toolset(db), query_toolset(db), analysis_toolset(db)]
    if writes:
        # Listed only here: without --allow-write no tool can write, whatever --toolsets says. `schema` is
        # bound below, before any call can run: the resources need the server, the server needs its toolsets.
        toolsets.append(
            write_toolset(db, before_write=lambda: schema.read_once(), after_write=lambda: schema.refresh())
        )
    server = ReferenceServer(
        "db",
        version=__version__,
        instructions=f"{INSTRUCTIONS} Connected to {db.dialect}"
        + ("; execute_statement writes and commits." if writes else ", read-only."),
        toolsets=toolsets,
        enabled_toolsets=settings.toolsets,
        read_only=settings.read_only,
    )
    schema = SchemaResources(server, db)
    served = asyncio.Event()
    server.add_middleware(_SetOnFirstMessageAfterInitialize(served))
    if db.role_map is not None:
        server.add_middleware(_ActAsCallerRole(db.role_map))
    server.run_in_background(lambda: schema.watch(settings.schema_poll_s, served))
    server.on_shutdown(db.close)

    def ping() -> None:
        with db.connect() as connection:
            db.execute(connection, "SELECT 1")

    server.readiness.set(ping, upstream="the database")
    add_prompts(server)
    return server


from mcp_server_db.spec import open_database  # noqa: E402 - kept importable from here
