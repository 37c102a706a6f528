"""What the family's command line knows of this server: settings, arguments, how to build it (imported only
when serving) and its toolsets alone, for the command-line track, which never imports fastmcp."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING

from mcp_server_core import ServerSpec, Toolset

from mcp_server_db.settings import DbSettings

if TYPE_CHECKING:
    from mcp_server_db.database import Database

logger = logging.getLogger(__name__)


def open_database(settings: DbSettings) -> Database:
    """The database both tracks use; every new connection checks its role (database.py)."""
    from mcp_server_db.database import Database

    if settings.allow_privileged_role:
        logger.warning(
            "--allow-privileged-role: a superuser or a role with file, signal or replication powers is accepted; "
            "read-only then rests on the query guard alone (docs/db-least-privilege.md)"
        )
    role_map = None
    if settings.role_map is not None:
        from mcp_server_db.roles import RoleMapFile

        role_map = RoleMapFile(settings.role_map, claim=settings.role_claim)
    elif settings.role_claim:
        raise ValueError("--role-claim names the claim a role map is keyed on: give the map too (--role-map FILE)")
    return Database(
        settings.url,
        role_map=role_map,
        timeout_s=settings.statement_timeout_s,
        allow_write=settings.allow_write,
        allow_privileged_role=settings.allow_privileged_role,
        allowed_functions=settings.allow_functions,
    )


@contextmanager
def toolsets(settings: DbSettings) -> Iterator[Sequence[Toolset]]:
    with ExitStack() as stack:
        yield from _toolsets(settings, stack)


def _toolsets(settings: DbSettings, stack: ExitStack) -> Iterator[Sequence[Toolset]]:
    # A command always reaches the database: SQLAlchemy loads here, while the helpers keep the collector paused
    # for start-up (cli._run_command), rather than inside the call. The server keeps it for its first connection.
    import sqlalchemy  # noqa: F401

    from mcp_server_db.tools import analysis_toolset, query_toolset, schema_toolset, write_toolset

    db = open_database(settings)
    try:
        if db.role_map is not None:
            # The command line is the operator's own shell: it acts as the map's `local` caller, or its default.
            from mcp_server_db.roles import acting_as

            stack.enter_context(acting_as(db.role_map.current(), "local", {}))
        chosen = [schema_toolset(db), query_toolset(db), analysis_toolset(db)]
        if settings.allow_write and not settings.read_only:
            chosen.append(write_toolset(db, before_write=lambda: None, after_write=lambda: None))
        yield chosen
    finally:
        db.close()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("url", nargs="?", help="SQLAlchemy database URL (default: the bundled sample database)")
    parser.add_argument("--statement-timeout-s", type=float, help="server-side timeout of each statement")
    parser.add_argument(
        "--allow-write", action="store_const", const=True, help="add execute_statement, which writes and commits"
    )
    parser.add_argument("--schema-poll-s", type=float, help="seconds between schema checks (0: off; default 10)")
    parser.add_argument(
        "--allow-privileged-role",
        action="store_const",
        const=True,
        help="accept a superuser or a role with file/signal powers (logs a warning; see docs/db-least-privilege.md)",
    )
    parser.add_argument(
        "--allow-function",
        dest="allow_functions",
        action="append",
        metavar="NAME",
        help="let read-only queries call this function too (repeatable; the operator vouches it has no effects)",
    )
    parser.add_argument(
        "--role-map",
        metavar="FILE",
        help="PostgreSQL: act as each caller's role (SET ROLE), from this TOML/JSON map; unmapped callers are refused",
    )
    parser.add_argument(
        "--role-claim",
        metavar="CLAIM",
        help="the JWT claim the role map is keyed on (default: the map's claim, else the principal)",
    )


SPEC = ServerSpec(
    distribution="mcp-server-db",
    summary="A database inspector: schema, read-only queries and plans.",
    settings=DbSettings,
    build="mcp_server_db.server:build_server",
    toolsets=toolsets,
    skill="Use to inspect a SQL database from a shell: find tables, describe them, run one read-only SELECT.",
    notes=[
        "Queries are one read-only statement; values go in --params, never into the SQL.",
        "The database URL comes first (`mcp-server-db URL call ...`) or from DATABASE_URL.",
    ],
    add_arguments=add_arguments,
)
