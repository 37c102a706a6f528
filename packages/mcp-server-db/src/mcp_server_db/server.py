"""Builds the database server from the helpers."""

from __future__ import annotations

import argparse

from mcp_server_core import ReferenceServer, ServerSpec

from mcp_server_db import __version__
from mcp_server_db.database import Database
from mcp_server_db.settings import DbSettings
from mcp_server_db.tools import plan_toolset, query_toolset, schema_toolset

INSTRUCTIONS = (
    "A read-only database inspector. find_objects, then describe_tables; run_query for one SELECT with params "
    "(EXPLAIN SELECT shows a plan)."
)


def build_server(settings: DbSettings) -> ReferenceServer:
    db = Database(settings.url, timeout_s=settings.statement_timeout_s)
    return ReferenceServer(
        "db",
        version=__version__,
        instructions=f"{INSTRUCTIONS} Connected to {db.dialect}.",
        toolsets=[schema_toolset(db), query_toolset(db), plan_toolset(db)],
        enabled_toolsets=settings.toolsets,
        read_only=settings.read_only,
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("url", nargs="?", help="SQLAlchemy database URL (default: the bundled sample database)")
    parser.add_argument("--statement-timeout-s", type=float, help="server-side timeout of each statement")


SPEC = ServerSpec(
    distribution="mcp-server-db",
    summary="A database inspector over MCP: schema, read-only queries and plans.",
    settings=DbSettings,
    build=build_server,
    add_arguments=add_arguments,
)
