"""The schema as resources, kept current by a fingerprint checked on an interval and after each write.

`db://schema` is the overview (every table and view with its columns); `db://tables/{name}` is one table in the
same DDL-like text describe_tables renders. A table added or dropped sends resources/list_changed; a table
whose definition changed sends resources/updated for it and for the overview, to subscribers only.

The tables are served from one `ResourceSet`, not registered one by one with `server.add_resource`: fastmcp's
local provider compares each new resource with all it holds, which made 5,000 tables take 16 s to start and
list (0.7 s from one set).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable, Sequence
from urllib.parse import quote, unquote

import anyio.to_thread
from fastmcp.resources import FunctionResource, Resource, ResourceTemplate
from fastmcp.utilities.components import FastMCPComponent
from fastmcp.utilities.versions import VersionSpec
from mcp_server_core import NotFound, ReferenceServer, ResourceSet, ToolFailure, Untrusted, cut_to_budget, one_line
from pydantic import PrivateAttr

from mcp_server_db.database import Database
from mcp_server_db.rendering import columns_text

__all__ = ["OVERVIEW", "SchemaResources", "TableResource", "table_uri"]

OVERVIEW = "db://schema"
OVERVIEW_BYTES = 60_000
TABLE_RESOURCES = 1_000
"""Most tables listed one by one as resources (the first by name): resources/list is one page, and a database of
100,000 tables made it a hundred megabytes. Every table stays readable through db://tables/{name}, and named in
the overview and by find_objects."""
logger = logging.getLogger(__name__)


async def _to_the_end(read: Callable[[], None]) -> None:
    """`read()` in a worker thread; cancelled, it still waits for the thread: the server closes its pools
    after this job stops, and a read still under way would open a connection nobody closes."""
    running = asyncio.ensure_future(asyncio.to_thread(read))
    try:
        await asyncio.shield(running)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            await running
        raise


def table_uri(name: str) -> str:
    return f"db://tables/{quote(name, safe='')}"


class TableResource(Resource):
    """`db://tables/{name}` for the table or view `name`, read when asked (in a worker thread: it queries).

    Not a FunctionResource: `from_function` inspects its function each time, 4x the cost of this for 5,000
    tables (0.72 s against 0.17 s)."""

    _read_table: Callable[[str], str] | None = PrivateAttr(default=None)

    async def read(self) -> str:
        assert self._read_table is not None
        return await anyio.to_thread.run_sync(self._read_table, self.name)


class _TablesReadOnDemand(ResourceSet):
    """The tables' resources, with the schema read before the first listing or lookup needs it."""

    def __init__(self, schema: SchemaResources) -> None:
        super().__init__()
        self._schema = schema

    async def get_tasks(self) -> Sequence[FastMCPComponent]:
        # fastmcp lists every provider's components at start to find background tasks; only tools can be one,
        # and listing the tables here would read the schema before the initialize answer.
        return []

    async def _list_resources(self) -> Sequence[Resource]:
        if not self._schema.read_tried:
            await anyio.to_thread.run_sync(self._schema.read_once)
        return await super()._list_resources()

    async def _get_resource(self, uri: str, version: VersionSpec | None = None) -> Resource | None:
        if not self._schema.read_tried:
            await anyio.to_thread.run_sync(self._schema.read_once)
        return await super()._get_resource(uri, version)


class SchemaResources:
    """The schema is first read after start, not during it (SQLAlchemy's import and the first connection
    would delay the initialize answer): by `watch` once the client has its answer, or by whatever needs it
    first (a listing, a subscription, a write). That read is the baseline later changes are announced
    against; nothing is announced before it, as no client can have seen a table yet."""

    def __init__(self, server: ReferenceServer, db: Database) -> None:
        self.server = server
        self.db = db
        self.known: dict[str, str] = {}
        self.tables = _TablesReadOnDemand(self)
        self.read_tried = False
        """Whether the first read was made (successful or not): after it, every read is announced."""
        self._lock = threading.Lock()
        self._first_read_lock = threading.Lock()
        server.add_provider(self.tables)
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
        from mcp_server_db.catalog import per_table, relations

        with self.db.connect() as connection:
            inspector = self.db.inspector(connection)
            found = relations(self.db, inspector)
            columns = per_table(inspector.get_multi_columns, {r.schema for r in found})
        lines = [
            f"{r.kind} {Untrusted(r.qualified)} ({columns_text(columns.get((r.schema, r.name), []))})" for r in found
        ]
        return cut_to_budget("\n".join(lines) or "No tables.", OVERVIEW_BYTES, "find_objects pages through the rest")

    def read_table(self, name: str) -> str:
        """The template's reader: `name` is as the URI spells it, percent-encoded. A table that does not exist is
        the client's mistake (-32602, the helpers' answer to a NotFound), logged as one, not as a server fault:
        fastmcp logs what a template raises at the level of its own error type, ERROR with a traceback for
        anything else."""
        try:
            return self.render_table(unquote(name))
        except NotFound as exc:
            from fastmcp.exceptions import ResourceError

            raise ResourceError(str(exc), log_level=logging.INFO) from exc

    def render_table(self, name: str) -> str:
        from mcp_server_db.catalog import describe

        with self.db.connect() as connection:
            (info,) = describe(self.db, connection, [name])
        return info.render()

    def refresh(self, *, announce: bool = True) -> None:
        """Compare the schema with what was last seen and announce the difference; safe from any thread."""
        from mcp_server_db.catalog import fingerprint

        with self._lock:
            with self.db.connect() as connection:
                current = fingerprint(self.db, connection)
            added = current.keys() - self.known.keys()
            dropped = self.known.keys() - current.keys()
            altered = {name for name in current.keys() & self.known.keys() if current[name] != self.known[name]}
            self.known = current
            # Under the lock, so two refreshes (the poller, a write) apply their differences in order. At most
            # TABLE_RESOURCES are listed: room a drop frees goes to the first tables by name not yet listed.
            gone = [table_uri(n) for n in dropped]
            listed = len(self.tables) - sum(1 for uri in gone if uri in self.tables)
            room = max(TABLE_RESOURCES - listed, 0)
            fresh = [n for n in sorted(current) if table_uri(n) not in self.tables][:room] if room else []
            self.tables.update(add=[self._table_resource(n) for n in fresh], remove=gone)
        if not announce:
            return
        if added or dropped:
            self.server.changes.resources_changed()
        for name in sorted(added | dropped | altered):
            self.server.changes.resource_updated(table_uri(name))
        if added or dropped or altered:
            self.server.changes.resource_updated(OVERVIEW)

    def read_once(self) -> None:
        """The first read, made once; a database down or refused at that point is logged, not raised: the
        tables are then listed from the first later read that succeeds, and announced by it."""
        with self._first_read_lock:
            if self.read_tried:
                return
            try:
                self.refresh(announce=False)
            except ToolFailure as exc:
                logger.warning("schema not read: %s", exc)
            finally:
                self.read_tried = True

    async def watch(self, every_s: float, served: asyncio.Event) -> None:
        """The background job: the first read once `served` is set (the client has its initialize answer) or
        one interval has passed, then, if `every_s`, a check every interval; a failed check (the database
        restarting) is logged and retried at the next."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(served.wait(), timeout=every_s or None)
        await _to_the_end(self.read_once)
        while every_s:
            await asyncio.sleep(every_s)
            try:
                await _to_the_end(self.refresh)
            except ToolFailure as exc:
                logger.warning("schema check failed: %s", exc)

    def _table_resource(self, name: str) -> TableResource:
        resource = TableResource(
            uri=table_uri(name),
            # The table's name is the database's: resources/list shows it in its one-line form.
            name=one_line(name),
            title=f"Table {Untrusted(name)}",
            description=f"Definition of {Untrusted(name)}",
            mime_type="text/plain",
        )
        resource._read_table = self.render_table
        return resource
