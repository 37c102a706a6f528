"""Builds the database server from the helpers."""

from __future__ import annotations

import logging

from mcp_server_core import ReferenceServer, ToolFailure

from mcp_server_db import __version__
from mcp_server_db.database import PrivilegedRole
from mcp_server_db.prompts import add_prompts
from mcp_server_db.resources import SchemaResources
from mcp_server_db.settings import DbSettings
from mcp_server_db.tools import analysis_toolset, query_toolset, schema_toolset, write_toolset

INSTRUCTIONS = (
    "A database inspector. find_objects, then describe_tables; run_query for one SELECT with params "
    "(EXPLAIN SELECT shows a plan)."
)
logger = logging.getLogger(__name__)


def build_server(settings: DbSettings) -> ReferenceServer:
    db = open_database(settings)
    writes = settings.allow_write and not settings.read_only
    toolsets = [schema_toolset(db), query_toolset(db), analysis_toolset(db)]
    if writes:
        # Listed only here: without --allow-write no tool can write, whatever --toolsets says. `schema` is
        # bound below, before any call can run: the resources need the server, the server needs its toolsets.
        toolsets.append(write_toolset(db, after_write=lambda: schema.refresh()))
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
    try:
        schema.refresh(announce=False)
    except PrivilegedRole as exc:  # a configuration to fix, not an outage to wait out
        db.close()
        raise ValueError(str(exc)) from None
    except ToolFailure as exc:  # the database is down at start: serve anyway, the poller catches up
        logger.warning("schema not read at start: %s", exc)
    if settings.schema_poll_s:
        server.run_in_background(lambda: schema.poll(settings.schema_poll_s))
    server.on_shutdown(db.close)

    def ping() -> None:
        with db.connect() as connection:
            db.execute(connection, "SELECT 1")

    server.readiness.set(ping, upstream="the database")
    add_prompts(server)
    return server


from mcp_server_db.spec import open_database  # noqa: E402 - kept importable from here
