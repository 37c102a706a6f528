"""The schema as resources, kept current by a fingerprint checked on an interval and after each write.

`db://schema` is the overview (every table and view with its columns); `db://tables/{name}` is one table in the
same DDL-like text describe_tables renders. A table added or dropped sends resources/list_changed; a table
whose definition changed sends resources/updated for it and for the overview, to subscribers only.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from urllib.parse import quote, unquote

from fastmcp.resources import FunctionResource, ResourceTemplate
from mcp_server_core import ReferenceServer, ToolFailure, cut_to_budget

from mcp_server_db.catalog import columns_text, describe, fingerprint, per_table, relations
from mcp_server_db.database import Database

__all__ = ["OVERVIEW", "SchemaResources", "table_uri"]

OVERVIEW = "db://schema"
OVERVIEW_BYTES = 60_000
logger = logging.getLogger(__name__)


def table_uri(name: str) -> str:
    return f"db://tables/{quote(name, safe='')}"


class SchemaResources:
    def __init__(self, server: ReferenceServer, db: Database) -> None:
        self.server = server
        self.db = db
        self.known: dict[str, str] = {}
        self._lock = threading.Lock()
        server.add_resource(
            FunctionResource.from_function(
                self.read_overview,
                uri=OVERVIEW,
                name="schema",
                title="Schema overview",
                description=f"Every table and view of the {db.dialect} database with its columns",
                mime_type="text/plain",
            )
        )
        server.add_template(
            ResourceTemplate.from_function(
                self.read_table,
                uri_template="db://tables/{name}",
                name="table",
                title="Table by name",
                description="Columns, keys, indexes and checks of one table or view",
                mime_type="text/plain",
            )
        )

    def read_overview(self) -> str:
        with self.db.connect() as connection:
            inspector = self.db.inspector(connection)
            found = relations(self.db, inspector)
            columns = per_table(inspector.get_multi_columns, {r.schema for r in found})
        lines = [f"{r.kind} {r.qualified} ({columns_text(columns.get((r.schema, r.name), []))})" for r in found]
        return cut_to_budget("\n".join(lines) or "No tables.", OVERVIEW_BYTES, "find_objects pages through the rest")

    def read_table(self, name: str) -> str:
        with self.db.connect() as connection:
            (info,) = describe(self.db, connection, [unquote(name)])
        return info.render()

    def refresh(self, *, announce: bool = True) -> None:
        """Compare the schema with what was last seen and announce the difference; safe from any thread."""
        with self._lock:
            with self.db.connect() as connection:
                current = fingerprint(self.db, connection)
            added = current.keys() - self.known.keys()
            dropped = self.known.keys() - current.keys()
            altered = {name for name in current.keys() & self.known.keys() if current[name] != self.known[name]}
            self.known = current
        for name in sorted(added):
            self.server.add_resource(self._table_resource(name))
        for name in sorted(dropped):
            self.server.local_provider.remove_resource(table_uri(name))
        if not announce:
            return
        if added or dropped:
            self.server.changes.resources_changed()
        for name in sorted(added | dropped | altered):
            self.server.changes.resource_updated(table_uri(name))
        if added or dropped or altered:
            self.server.changes.resource_updated(OVERVIEW)

    async def poll(self, every_s: float) -> None:
        """The background job: a failed check (the database restarting) is logged and retried next interval."""
        while True:
            await asyncio.sleep(every_s)
            try:
                await asyncio.to_thread(self.refresh)
            except ToolFailure as exc:
                logger.warning("schema check failed: %s", exc)

    def _table_resource(self, name: str) -> FunctionResource:
        return FunctionResource.from_function(
            lambda: self.read_table(name),
            uri=table_uri(name),
            name=name,
            title=f"Table {name}",
            description=f"Definition of {name}",
            mime_type="text/plain",
        )
