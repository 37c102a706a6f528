"""The engine layer: connections that cannot write, statement timeouts, and schema reads."""

from __future__ import annotations

import functools
import json
import logging
import re
import secrets
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from mcp_server_core import (
    InvalidArgument,
    Refused,
    Unavailable,
    cancel_on_abandon,
    register_secret,
    report_progress,
    start_upstream_span,
    upstream_span,
)
from mcp_server_core.protocol.cancellation import current_abandonment

from mcp_server_db.functions import ALLOWED_NAMES, NEVER, PG_VOLATILE_READS
from mcp_server_db.rendering import VALUE_BYTES, VALUE_CHARS, CutValue, cut_value

if TYPE_CHECKING:
    from sqlalchemy import Connection, Engine
    from sqlalchemy.exc import DBAPIError

    from mcp_server_db.guard import Verdict
    from mcp_server_db.roles import RoleMapFile

# SQLAlchemy itself is imported at the first connection (`Database._open_engines`), not with this module.

__all__ = [
    "LEAST_PRIVILEGE_SQL",
    "PROGRESS_AFTER_S",
    "SQLITE_MOST_BYTES",
    "Database",
    "PrivilegedRole",
    "Progress",
    "RowStream",
    "SchemaCache",
    "UnknownColumn",
    "sample_path",
    "statement_kind",
]

logger = logging.getLogger(__name__)

LEAST_PRIVILEGE_SQL = {
    "postgresql": (
        "CREATE ROLE mcp_reader LOGIN PASSWORD '...'; GRANT CONNECT ON DATABASE <db> TO mcp_reader; "
        "GRANT USAGE ON SCHEMA public TO mcp_reader; GRANT SELECT ON ALL TABLES IN SCHEMA public TO mcp_reader; "
        "ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO mcp_reader;"
    ),
    "mysql": (
        "CREATE USER 'mcp_reader'@'%' IDENTIFIED BY '...'; GRANT SELECT, SHOW VIEW ON <db>.* TO 'mcp_reader'@'%';"
    ),
}
"""What docs/db-least-privilege.md explains; the refusal quotes it so the fix is one copy away."""


_KINDS = frozenset(
    [
        "SELECT",
        "WITH",
        "VALUES",
        "TABLE",
        "EXPLAIN",
        "SHOW",
        "DESCRIBE",
        "PRAGMA",
        "SET",
        "INSERT",
        "UPDATE",
        "DELETE",
        "MERGE",
        "REPLACE",
        "UPSERT",
        "CREATE",
        "DROP",
        "ALTER",
        "TRUNCATE",
        "COMMENT",
        "GRANT",
        "REVOKE",
        "CALL",
        "ANALYZE",
        "VACUUM",
        "REINDEX",
        "BEGIN",
        "COMMIT",
        "ROLLBACK",
    ]
)
_MAIN_KINDS = frozenset({"SELECT", "INSERT", "UPDATE", "DELETE", "MERGE"})
# Quoted text and comments are skipped whole, so no word inside them can be taken for the statement's kind.
_WORDS = re.compile(r"'(?:[^']|'')*'|\"[^\"]*\"|`[^`]*`|--[^\n]*|/\*.*?\*/|[()]|[A-Za-z_]+", re.DOTALL)


def statement_kind(sql: str) -> str:
    """What a statement does, for a span's name: a keyword from a fixed list (`SELECT`, `EXPLAIN`, ...), or
    `statement`; never a word of the text that is not on the list. A WITH is named by its main statement."""
    depth = 0
    first: str | None = None
    for match in _WORDS.finditer(sql):
        word = match.group()
        if word in ("(", ")"):
            depth += 1 if word == "(" else -1
            continue
        if not (word[0].isalpha() or word[0] == "_"):
            continue
        word = word.upper()
        if first is None:
            first = word
            if word != "WITH":
                break
        elif depth == 0 and word in _MAIN_KINDS:
            return word
    return first if first in _KINDS else "statement"


class PrivilegedRole(Refused):
    """The connection's role can do what no read-only statement should reach: files, signals, other sessions."""


_SQLITE_DENY = {sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH}
SQLITE_MOST_BYTES = 32 * 1024 * 1024
"""The longest string or blob a read may build or read on SQLite (its default is 1 GB); MariaDB's own bound is
its max_allowed_packet (16 MiB by default), PostgreSQL's values are cut in the database (`_pg_cut_sql`)."""
_SQLITE_WRITE_PRAGMAS = {"query_only", "writable_schema", "journal_mode", "schema_version", "user_version"}


def _file_id(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except OSError:  # between the unlink and the rename of a replacement: nothing to compare yet
        return None
    return stat.st_dev, stat.st_ino


# What `Database.check_statement` looks for before the statement is planned: the first piece of code not known to
# be safe that the statement's names can reach, as (kind, name, where), and every relation they reach.
_PG_NOT_EXTENSION = (
    "NOT EXISTS (SELECT FROM pg_depend e WHERE e.classid = '{catalog}'::regclass AND e.objid = {oid} "
    "AND e.deptype = 'e')"
)


def _pg_safe(proc: str) -> str:
    """SQL that is true when the pg_proc row `proc` may run: never one on the list of functions that reach outside
    (`NEVER`, whatever the operator allows); else one whose name the operator allowed, or a built-in
    (pg_catalog's or information_schema's, created with the database: an OID below 16384) or an installed
    extension's that is immutable or stable (PostgreSQL's own promise that it changes nothing) or a volatile one
    known to only read (random(), pg_lock_status(), ...)."""
    never = ",".join(sorted(NEVER))
    reads = ",".join(sorted(ALLOWED_NAMES["postgresql"] | PG_VOLATILE_READS))
    return (
        f"({proc}.proname <> ALL('{{{never}}}'::text[]) AND ({proc}.proname = ANY(%(allowed)s::text[])"
        f" OR (({proc}.provolatile <> 'v' OR {proc}.proname = ANY('{{{reads}}}'::text[]))"
        f" AND (({proc}.oid < 16384 AND {proc}.pronamespace IN ('pg_catalog'::regnamespace,"
        " 'information_schema'::regnamespace))"
        f" OR NOT {_PG_NOT_EXTENSION.format(catalog='pg_proc', oid=f'{proc}.oid')}))))"
    )


_PG_NAMES = (
    # What the statement's own names can reach: the first found, and whether its relations need the deep check.
    "SELECT (SELECT ARRAY[kind, name, place] FROM ("  # noqa: S608 - fixed text, every name a bound parameter
    "SELECT 'function', p.proname, n.nspname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
    " WHERE p.proname = ANY(%(functions)s) AND n.nspname <> 'pg_catalog' AND "
    + _PG_NOT_EXTENSION.format(catalog="pg_proc", oid="p.oid")
    # A type counts where its spelling reaches it: quoted in another case ("Text"), or unquoted because the
    # search path finds it before any built-in of that name.
    + " UNION ALL SELECT 'type', t.typname, n.nspname FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace"
    " WHERE lower(t.typname) = ANY(%(types)s) AND n.nspname NOT IN ('pg_catalog', 'information_schema')"
    " AND (t.typname <> lower(t.typname) OR to_regtype(t.typname) = t.oid) AND "
    + _PG_NOT_EXTENSION.format(catalog="pg_type", oid="t.oid")
    # An operator counts unless the operator allowed the function behind it.
    + " UNION ALL SELECT 'operator', o.oprname, n.nspname FROM pg_operator o JOIN pg_namespace n"
    " ON n.oid = o.oprnamespace WHERE o.oprname = ANY(%(operators)s) AND n.nspname <> 'pg_catalog'"
    " AND (SELECT proname FROM pg_proc WHERE oid = o.oprcode) <> ALL(%(allowed)s::text[]) AND "
    + _PG_NOT_EXTENSION.format(catalog="pg_operator", oid="o.oid")
    + ") AS found(kind, name, place) ORDER BY kind, name, place LIMIT 1),"
    # Only a plain table, without children or row-level security, whose columns and row type are built-in or
    # have no cast of the database's own, reads nothing but its rows: anything else takes the deep check.
    " EXISTS (SELECT FROM unnest(%(relations)s::text[]) AS name JOIN pg_class c ON c.oid = to_regclass(name)"
    " WHERE c.relkind <> 'r' OR c.relhassubclass OR c.relrowsecurity"
    " OR EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND a.atttypid >= 16384)"
    " OR EXISTS (SELECT FROM pg_cast k WHERE k.castsource = c.reltype OR k.casttarget = c.reltype))"
    # A cast between built-in types that is not built-in (only a superuser can make one) counts everywhere.
    " OR EXISTS (SELECT FROM pg_cast k WHERE k.oid >= 16384 AND k.castsource < 16384 AND k.casttarget < 16384)"
)


_PG_OWN_CODE = (
    # The relations named, the relations their views read (and those views' views), and every inheritance
    # child and partition under any of them: a read of the parent reads the children.
    "WITH RECURSIVE reached(oid) AS ("  # noqa: S608 - fixed text, every name a bound parameter
    " SELECT to_regclass(name)::oid FROM unnest(%(relations)s::text[]) AS name WHERE to_regclass(name) IS NOT NULL"
    " UNION SELECT under.oid FROM reached, LATERAL (SELECT d.refobjid FROM pg_rewrite r JOIN pg_depend d"
    " ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid AND d.refclassid = 'pg_class'::regclass"
    " WHERE r.ev_class = reached.oid UNION ALL SELECT i.inhrelid FROM pg_inherits i WHERE i.inhparent = reached.oid)"
    " AS under(oid)),"
    # Every type a value read from them can have: their columns' and row types, and the types inside those
    # (array elements, a domain's base, a range's subtype, a composite's attributes).
    " types(oid) AS (SELECT a.atttypid FROM reached JOIN pg_attribute a ON a.attrelid = reached.oid"
    " AND a.attnum > 0 AND NOT a.attisdropped"
    " UNION SELECT c.reltype FROM reached JOIN pg_class c ON c.oid = reached.oid WHERE c.reltype <> 0"
    " UNION SELECT inside.oid FROM types JOIN pg_type t ON t.oid = types.oid, LATERAL (SELECT t.typelem"
    " UNION ALL SELECT t.typbasetype UNION ALL SELECT r.rngsubtype FROM pg_range r WHERE r.rngtypid = t.oid"
    " UNION ALL SELECT r.rngtypid FROM pg_range r WHERE r.rngmultitypid = t.oid"
    " UNION ALL SELECT a.atttypid FROM pg_attribute a WHERE a.attrelid = t.typrelid AND a.attnum > 0"
    " AND NOT a.attisdropped) AS inside(oid) WHERE inside.oid <> 0),"
    " code(catalog, oid, via) AS ("
    " SELECT d.refclassid, d.refobjid, reached.oid FROM reached JOIN pg_rewrite r ON r.ev_class = reached.oid"
    " JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid"
    " UNION ALL SELECT d.refclassid, d.refobjid, reached.oid FROM reached JOIN pg_policy p"
    " ON p.polrelid = reached.oid JOIN pg_depend d ON d.classid = 'pg_policy'::regclass AND d.objid = p.oid),"
    # Every function that reading them can run, with how it is reached; judged below, once (`_pg_safe`).
    # A view's definition (its views' too) or a row-level policy calls functions and operators' functions (the
    # catalog records no dependency on built-ins: those in a view are judged in its plan, `check_plan`).
    " calls(kind, name, place, proc) AS ("
    " SELECT 'relation', p.proname || '()', code.via::regclass::text, p.oid FROM code"
    " JOIN pg_proc p ON code.catalog = 'pg_proc'::regclass AND p.oid = code.oid"
    " UNION ALL SELECT 'relation', 'operator ' || o.oprname, code.via::regclass::text, o.oprcode FROM code"
    " JOIN pg_operator o ON code.catalog = 'pg_operator'::regclass AND o.oid = code.oid"
    # A cast between types a value can have here: converting runs its function. Implicit and assignment casts
    # run unwritten (and no plan shows them); an explicit one where its target type is written.
    " UNION ALL SELECT 'cast', f.proname, format_type(c.castsource, NULL) || ' to ' || format_type(c.casttarget, NULL),"
    " f.oid FROM pg_cast c JOIN pg_proc f ON f.oid = c.castfunc"
    " WHERE c.oid >= 16384"  # initdb's casts call built-ins
    " AND (c.castsource < 16384 OR c.castsource = ANY(ARRAY(SELECT oid FROM types)))"
    " AND (c.casttarget < 16384 OR c.casttarget = ANY(ARRAY(SELECT oid FROM types)))"
    " AND (c.castcontext <> 'e' OR (SELECT lower(typname) FROM pg_type WHERE oid = c.casttarget) = ANY(%(spelled)s))"
    # A domain's CHECK runs wherever a value becomes one (coalesce(d, 'x') makes 'x' the domain's).
    " UNION ALL SELECT 'domain', f.proname, format_type(t.oid, NULL), f.oid FROM types JOIN pg_type t"
    " ON t.oid = types.oid AND t.typtype = 'd' JOIN pg_constraint k ON k.contypid = t.oid JOIN pg_depend d"
    " ON d.classid = 'pg_constraint'::regclass AND d.objid = k.oid AND d.refclassid = 'pg_proc'::regclass"
    " JOIN pg_proc f ON f.oid = d.refobjid),"
    " found(kind, name, place) AS ("
    " SELECT calls.kind, calls.name, calls.place FROM calls JOIN pg_proc p ON p.oid = calls.proc WHERE NOT "
    + _pg_safe("p")
    # A view using a type of the database's own (a domain's CHECK, a base type's input runs in it).
    + " UNION ALL SELECT 'relation', 'type ' || t.typname, code.via::regclass::text FROM code JOIN pg_type t"
    " ON code.catalog = 'pg_type'::regclass AND t.oid = code.oid AND t.typtype NOT IN ('c', 'e')"
    " AND t.typnamespace NOT IN ('pg_catalog'::regnamespace, 'information_schema'::regnamespace) AND "
    + _PG_NOT_EXTENSION.format(catalog="pg_type", oid="t.oid")
    # A foreign table's wrapper reads files, runs programs (file_fdw) or asks other servers, at every read.
    + " UNION ALL SELECT 'foreign', c.oid::regclass::text, c.oid::regclass::text"
    " FROM reached JOIN pg_class c ON c.oid = reached.oid WHERE c.relkind = 'f')"
    " SELECT (SELECT ARRAY[kind, name, place] FROM found ORDER BY kind, name, place LIMIT 1),"
    " ARRAY(SELECT DISTINCT to_regclass(name)::text FROM unnest(%(relations)s::text[]) AS name"
    " WHERE to_regclass(name) IS NOT NULL ORDER BY 1),"
    " ARRAY(SELECT n.nspname FROM reached JOIN pg_class c ON c.oid = reached.oid"
    " JOIN pg_namespace n ON n.oid = c.relnamespace ORDER BY reached.oid),"
    " ARRAY(SELECT c.relname FROM reached JOIN pg_class c ON c.oid = reached.oid ORDER BY reached.oid)"
)

_COM_RESET_CONNECTION = 0x1F
_PG_POWERS = ("pg_read_server_files", "pg_write_server_files", "pg_execute_server_program", "pg_signal_backend")
_MY_POWERS = ("SUPER", "FILE", "PROCESS", "ALL PRIVILEGES", "SHUTDOWN", "CONNECTION ADMIN", "BINLOG ADMIN")


def _role_powers(dialect: str, dbapi_connection: Any) -> list[str]:
    """What the connected role can do beyond reading its tables, worded for a refusal; empty when nothing."""
    cursor = dbapi_connection.cursor()
    try:
        if dialect == "postgresql":
            cursor.execute(
                "SELECT rolsuper, rolreplication, rolcreaterole, ARRAY(SELECT b.rolname FROM pg_roles b "
                "WHERE b.rolname = ANY(%s) AND pg_has_role(current_user, b.oid, 'MEMBER') ORDER BY 1) "
                "FROM pg_roles WHERE rolname = current_user",
                (list(_PG_POWERS),),
            )
            row = cursor.fetchone()
            if row is None:
                return []
            superuser, replication, createrole, members = row
            powers = ["superuser"] if superuser else []
            powers += ["REPLICATION"] if replication else []
            powers += ["CREATEROLE"] if createrole else []
            return powers + [f"member of {name}" for name in members]
        grants = []
        cursor.execute("SHOW GRANTS")
        grants += [str(row[0]) for row in cursor.fetchall()]
        for role in re.findall(r"^GRANT `([^`]+)` TO ", "\n".join(grants), flags=re.MULTILINE):
            cursor.execute(f"SHOW GRANTS FOR `{role.replace('`', '``')}`")
            grants += [str(row[0]) for row in cursor.fetchall()]
        found: list[str] = []
        for grant in grants:
            match = re.match(r"GRANT (.+?) ON \*\.\* TO", grant)
            if match:
                granted = {p.strip().upper() for p in match.group(1).split(",")}
                found += [p for p in _MY_POWERS if p in granted and p not in found]
        return found
    finally:
        cursor.close()


def _mapped_role_powers(dbapi_connection: Any, roles: Iterable[str]) -> list[str]:
    """PostgreSQL: what the role map's roles can do beyond reading their tables, or bypassing row-level security
    (which the map exists to let decide), each worded `role: POWER`."""
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute(
            "SELECT r.rolname, r.rolsuper, r.rolreplication, r.rolcreaterole, r.rolbypassrls, ARRAY(SELECT b.rolname "
            "FROM pg_roles b WHERE b.rolname = ANY(%s) AND pg_has_role(r.oid, b.oid, 'MEMBER') ORDER BY 1) "
            "FROM pg_roles r WHERE r.rolname = ANY(%s) ORDER BY 1",
            (list(_PG_POWERS), sorted(roles)),
        )
        found = []
        for name, superuser, replication, createrole, bypassrls, members in cursor.fetchall():
            flags = ["SUPERUSER"] * superuser + ["REPLICATION"] * replication + ["CREATEROLE"] * createrole
            flags += ["BYPASSRLS"] * bypassrls + list(members)
            found += [f"mapped role {name}: {flag}" for flag in flags]
        return found
    finally:
        cursor.close()


def _url_parts(url: str) -> tuple[str, str | None, str | None]:
    """A URL's backend (`postgresql` of `postgresql+psycopg://`), password and database, read without importing
    SQLAlchemy; the engine reads the URL again with SQLAlchemy at first use. Raises ValueError for what is
    no database URL at all, so a typo stops the server at start, not at its first call."""
    scheme, found, _ = url.partition("://")
    backend = scheme.partition("+")[0]
    if not found or not backend or not all(part.isidentifier() for part in scheme.split("+")):
        raise ValueError("the database URL must look like dialect+driver://user:password@host:port/database")
    try:
        parts = urlsplit(url, allow_fragments=False)
        password = parts.password
        parts.port  # noqa: B018 - raises for a port that is not a number
    except ValueError as exc:  # a port that is not a number, a broken IPv6 address
        raise ValueError(f"the database URL cannot be read: {exc}") from None
    path = parts.path.removeprefix("/")
    return backend.lower(), unquote(password) if password else None, unquote(path) if path else None


def _without_password(url: str, password: str | None) -> str:
    """The URL as messages may show it: its password, if any, as ***."""
    if not password:
        return url
    parts = urlsplit(url, allow_fragments=False)
    host = parts.netloc.rpartition("@")[2]
    return parts._replace(netloc=f"{parts.username or ''}:***@{host}").geturl()


def sample_path() -> Path:
    # Beside this module in the sources and in the wheel; importlib.resources would cost every start 5 ms.
    return Path(__file__).with_name("sample.db")


def _authorizer(action: int, arg1: str | None, arg2: str | None, _db: str | None, _trigger: str | None) -> int:
    if action in _SQLITE_DENY:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_PRAGMA and (arg1 or "").lower() in _SQLITE_WRITE_PRAGMAS and arg2 is not None:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() == "load_extension":
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def _writer_authorizer(action: int, arg1: str | None, arg2: str | None, db: str | None, trigger: str | None) -> int:
    # Write mode writes this database, not files beside it: no ATTACH, VACUUM INTO or extensions.
    if action in _SQLITE_DENY or (action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() == "load_extension"):
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


class _SqliteConnection(sqlite3.Connection):
    """Carries its own statement deadline (calls on different threads each stop on time) and the identity of
    the file it opened."""

    deadline = 0.0
    file_id: tuple[int, int] | None = None

    def past_deadline(self) -> int:
        return 1 if self.deadline and time.monotonic() > self.deadline else 0


class SchemaCache:
    """What reflection found, kept while the engine's schema version stays the same (SQLite's schema cookie,
    with the file's identity: `Database.schema_version`).

    Reflecting a table on SQLite costs a dozen catalog round trips, and resolving a name reads every table's
    name; the cookie is one header read, and any CREATE, DROP or ALTER, from any connection or process, bumps
    it, so an entry never outlives the schema it was read from. Engines without such a cheap validator
    (`version` None) are not cached. Values are shared between calls: callers copy, never mutate them.
    """

    def __init__(self, max_entries: int = 256) -> None:
        self.max_entries = max_entries
        self._lock = threading.Lock()
        self._version: int | None = None
        self._entries: OrderedDict[Hashable, Any] = OrderedDict()

    def lookup(self, version: int | None, key: Hashable) -> Any:
        """The value stored under `key` for this schema version, or None."""
        if version is None:
            return None
        with self._lock:
            if version != self._version:
                self._entries.clear()
                self._version = version
                return None
            value = self._entries.get(key)
            if value is not None:
                self._entries.move_to_end(key)
            return value

    def store(self, version: int | None, key: Hashable, value: Any) -> None:
        if version is None:
            return
        with self._lock:
            if version != self._version:  # the schema moved on while this was read: keep only the newer entries
                return
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)


PROGRESS_AFTER_S = 0.5
"""A call quicker than this sends no progress: only work someone waits for is worth a notification."""


class Progress:
    """How far one call's work has come, for its client (`report_progress`: sent only if the client asked
    with a progress token, at most every half second), once the work has run `PROGRESS_AFTER_S`."""

    def __init__(self, total: int | None = None) -> None:
        self.started = time.monotonic()
        self.total = total

    def __call__(self, done: int, message: str) -> None:
        if time.monotonic() - self.started >= PROGRESS_AFTER_S:
            report_progress(done, self.total, message)


class RowStream:
    """A streamed result whose reads are one `FETCH` span, from the first read to the close (one per batch of ten
    rows was four spans a call, a tenth of a traced call's cost): past the first round trip, rows come from the engine
    as they are read (a server-side cursor's FETCH, SQLite's steps, MariaDB's unbuffered reads). A long read
    reports the rows fetched so far as progress; how many will come is unknown.

    With `cuts`, the result's last column holds, per column, the marker of a value the database cut (or NULL):
    the rows come back with those values in place and without that column. With `inline_cuts`, a cut value
    comes in its own column as that prefix and its marker (`_pg_cut_sql` on a result of the most columns).
    With `one_at_a_time` (MariaDB, which sends each value whole up to its max_allowed_packet), rows are read
    one by one and their long values cut at once, so a page holds one row whole at most, not ten."""

    def __init__(
        self,
        db: Database,
        result: Any,
        progress: Progress,
        *,
        cuts: bool = False,
        inline_cuts: str | None = None,
        one_at_a_time: bool = False,
    ) -> None:
        self._db = db
        self._result = result
        self._progress = progress
        self._cuts = cuts
        self._inline_cuts = inline_cuts
        self._one_at_a_time = one_at_a_time
        self.fetched = 0
        # A catalog read's rows (describe's sample) are part of the `describe`, as its statement is.
        self._operation = result.context.execution_options.get("mcp_operation") or "FETCH"
        self._span_end: Callable[[BaseException | None], None] | None = None

    def keys(self) -> Any:
        keys = list(self._result.keys())
        return keys[:-1] if self._cuts else keys

    def fetchmany(self, size: int) -> list[Any]:
        if self._span_end is None:
            self._span_end = self._db.start_span(self._operation)
        try:
            if self._one_at_a_time:
                rows: list[Any] = []
                while len(rows) < size and (row := self._result.fetchone()) is not None:
                    rows.append([_cut_now(value) for value in row])
            else:
                rows = self._result.fetchmany(size)
        except BaseException as exc:
            self._end_span(exc)
            raise
        if rows:
            self.fetched += len(rows)
            self._progress(self.fetched, f"{self.fetched:,} row{'s' if self.fetched > 1 else ''} fetched so far")
        if self._cuts:
            rows = [_with_cuts(row) for row in rows]
        if prefix := self._inline_cuts:
            rows = [
                [CutValue(v[len(prefix) :]) if isinstance(v, str) and v.startswith(prefix) else v for v in row]
                for row in rows
            ]
        return rows

    def close(self) -> None:
        try:
            self._result.close()
        finally:
            self._end_span(None)

    def _end_span(self, exc: BaseException | None) -> None:
        end, self._span_end = self._span_end, None
        if end is not None:
            end(exc)


def _cut_now(value: Any) -> Any:
    """A value as a page would show it if it would be cut there (a CutValue), else the value itself."""
    if isinstance(value, str) and len(value) > VALUE_CHARS:
        return CutValue(cut_value(value))
    if isinstance(value, bytes | bytearray) and len(value) > VALUE_BYTES:
        return CutValue(f"<{len(value)} bytes>")
    return value


def _with_cuts(row: Any) -> list[Any]:
    values = list(row[:-1])
    for index, marker in enumerate(row[-1] or ()):
        if marker is not None:
            values[index] = CutValue(marker)
    return values


# PostgreSQL types whose values are small whatever the query does: sent as they are.
_PG_FIXED_SIZE = frozenset([16, 18, 20, 21, 23, 26, 700, 701, 790, 1082, 1083, 1114, 1184, 1186, 1266, 1700, 2950])
_PG_BYTEA = 17
_PG_TEXT = frozenset([25, 1042, 1043])
"""text, char(n), varchar: measured and cut as they are, no conversion needed."""


_PG_MOST_COLUMNS = 1664
"""PostgreSQL's bound on a result's columns: a result that has them all leaves no room for the markers' column."""


def _pg_cut_sql(statement: str, columns: list[tuple[str, int]], most_bytes: int, inline: str | None = None) -> str:
    """The statement wrapped so that no value over `most_bytes` leaves the database: each such value is sent as
    NULL, and a last column carries its marker (its first VALUE_CHARS characters and its length; a bytea's size).
    PostgreSQL sends a value whole, up to 1 GB, and the driver holds it whole, twice over as text: a bound on
    rows is none on bytes.

    The wrapper runs only built-in code, whatever the columns' types: a value is made text by its type's output
    function (`format('%s', v)`, what sending it to the client runs anyway), never by a cast, which a type's
    owner can define (`CREATE CAST (addr AS text) WITH FUNCTION f(addr)`: `v::text` ran f for a plain SELECT *);
    every function, operator and type it names is qualified by pg_catalog, so no same-named one of the database's
    is found first on the search path.

    With `inline` (a result of the most columns PostgreSQL allows: no room for one more), a value that may be
    cut comes as text in its own column, a cut one as `inline` followed by its marker (`RowStream`)."""
    selected, markers = [], []
    for index, (name, type_oid) in enumerate(columns):
        value = f"q.c{index}"
        shown = '"' + name.replace('"', '""') + '"'
        if type_oid in _PG_FIXED_SIZE:
            selected.append(f"{value} AS {shown}")
            markers.append("NULL")
            continue
        as_text = value if type_oid in _PG_TEXT else f"pg_catalog.format('%s', {value})"
        size = f"pg_catalog.octet_length({value if type_oid == _PG_BYTEA else as_text})"
        if inline is not None:
            kept = as_text if type_oid != _PG_BYTEA else f"pg_catalog.format('%s', {value})"
            cut = f"pg_catalog.format('%s%s', '{inline}', {_pg_marker(value, as_text, size, type_oid)})"
            selected.append(
                f"CASE WHEN {size} OPERATOR(pg_catalog.<=) {int(most_bytes)} THEN {kept} ELSE {cut} END AS {shown}"
            )
            continue
        selected.append(f"CASE WHEN {size} OPERATOR(pg_catalog.<=) {int(most_bytes)} THEN {value} END AS {shown}")
        marker = _pg_marker(value, as_text, size, type_oid)
        markers.append(f"CASE WHEN {size} OPERATOR(pg_catalog.>) {int(most_bytes)} THEN {marker} END")
    aliases = ", ".join(f"c{index}" for index in range(len(columns)))
    # OFFSET 0 keeps the statement a subquery of its own: pulled up, each q.cN would be its expression again,
    # computed once per mention. The statement passed the guard; what wraps it is this server's.
    source = f"(SELECT * FROM ({statement}\n) AS s OFFSET 0) AS q({aliases})"  # noqa: S608
    if inline is not None:
        return f"SELECT {', '.join(selected)} FROM {source}"  # noqa: S608
    return f"SELECT {', '.join(selected)}, ARRAY[{', '.join(markers)}]::pg_catalog.text[] AS mcp_cuts FROM {source}"  # noqa: S608


_MY_STOPPED = frozenset([1317, 1969, 3024])
"""MariaDB's and MySQL's codes for a query interrupted (KILL QUERY) or past max_statement_time / max_execution_time."""
_MISSING_COLUMN = {
    "postgresql": re.compile(r'column (?:"((?:[^"]|"")+)"|(\S+)) does not exist'),
    "mysql": re.compile(r"Unknown column '([^']+)'"),
    "sqlite": re.compile(r"no such column: (\S+)"),
}


class UnknownColumn(InvalidArgument):
    """The statement names a column its tables do not have; the tools add the close ones (`column` is its name)."""

    def __init__(self, column: str, message: str) -> None:
        self.column = column
        super().__init__(message)


def _missing_column(dialect: str, orig: Any, message: str) -> str | None:
    """The column a statement failed for not finding, told by the engine's code where it has one."""
    if dialect == "postgresql" and getattr(orig, "sqlstate", None) != "42703":
        return None
    if dialect in ("mysql", "mariadb") and (getattr(orig, "args", None) or (None,))[0] != 1054:
        return None
    pattern = _MISSING_COLUMN["mysql" if dialect == "mariadb" else dialect]
    match = pattern.search(message)
    if match is None:
        return None
    name = next(group for group in match.groups() if group is not None)
    return name.replace('""', '"') if match.group(1) and dialect == "postgresql" else name.rpartition(".")[2]


_PG_PLAN_FUNCTIONS = (
    # What a plan calls (`check_plan`), by name as EXPLAIN writes it: every function of that name must be safe.
    "SELECT p.proname, n.nspname FROM unnest(%(schemas)s::text[], %(names)s::text[]) AS w(schema, name)"  # noqa: S608
    " JOIN pg_proc p ON p.proname = w.name JOIN pg_namespace n ON n.oid = p.pronamespace"
    " AND (w.schema = '' OR n.nspname = w.schema) WHERE NOT " + _pg_safe("p") + " ORDER BY 1, 2 LIMIT 1"
)


def _json_or_text(data: str | bytes) -> Any:
    """A json or jsonb value as Python, or as its text where it nests deeper than Python's parser recurses
    (about 1,000 levels: `RecursionError`); rendered, the text is cut like any long value."""
    try:
        return json.loads(data)
    except RecursionError:
        return data.decode() if isinstance(data, bytes) else data


def _pg_json_loads(dbapi_connection: Any, _record: Any) -> None:
    from psycopg.types.json import set_json_loads

    set_json_loads(_json_or_text, dbapi_connection)


_CATALOG_READ = {"mcp_operation": "describe", "stream_results": False}
"""A check's reads: `describe` spans, and never a server-side cursor (which EXPLAIN cannot have), even on a
connection a sample's stream left streaming (SQLAlchemy keeps execution options on the connection)."""


def _own_code_refusal(kind: str, name: str, where: str) -> Refused:
    """The refusal for what `_PG_OWN_CODE` found first: (kind, name, where)."""
    if kind == "relation":
        function = name.removesuffix("()") if name.endswith("()") and name[:-2] not in NEVER else None
        return Refused(
            f"Refused: reading {where} runs {name}, which is not known to change nothing (through a view's "
            "definition or a row-level policy), and only code known to change nothing runs here.",
            hint=f"Query the tables under it; if {name} is safe, the server's operator can allow it with "
            f"--allow-function {function}."
            if function
            else "Query the tables under it.",
        )
    if kind == "foreign":
        return Refused(
            f"Refused: the statement reads the foreign table {name} (named, through a view, or as a partition or "
            "inheritance child of a table it reads), whose wrapper reads files, runs programs or asks other "
            "servers at every read; only the database's own tables are read here.",
            hint="Query tables that are not foreign: a parent with a foreign partition or child is refused whole.",
        )
    if kind == "cast":
        return Refused(
            f"Refused: a value read here can be converted from {where} by {name}(), a cast the database defines "
            "(a type's owner can), which may run unwritten: only built-in code runs here.",
            hint=f"Leave out the conversion, or the column; if {name}() is safe, the server's operator can allow it "
            f"with --allow-function {name}.",
        )
    if kind == "domain":
        return Refused(
            f"Refused: a value here can be of the domain {where}, whose CHECK runs {name}(), not built-in code: "
            "only built-in code runs here.",
            hint=f"Query other columns; if {name}() is safe, the server's operator can allow it with "
            f"--allow-function {name}.",
        )
    if kind == "plan function":
        return Refused(
            f"Refused: the database's plan for this statement calls {name}() (in schema {where}), which is not "
            "known to change nothing (reached through a view, a policy or an inlined function, or named so): "
            "only built-in functions that change nothing run here.",
            hint="Query the tables directly."
            if name in NEVER
            else f"Query the tables directly; if {name}() is safe, the server's operator can allow it with "
            f"--allow-function {name}.",
        )
    if kind == "operator":
        return Refused(
            f"Refused: the operator {name} here can be the database's own (in schema {where}), which calls a "
            "function of the database: only built-in code runs here.",
            hint="Rewrite without the operator; if its function is safe, the server's operator can allow that "
            "function with --allow-function NAME.",
        )
    if kind == "type":
        return Refused(
            f"Refused: the type {name} here is the database's own (in schema {where}), not a built-in: making "
            "a value of it runs its input and CHECK code, and only built-in code runs here.",
            hint="Cast to a built-in type (text, integer, numeric, date, timestamp, ...).",
        )
    return Refused(
        f"Refused: the database defines its own {name}() (in schema {where}) beside the built-in one, and "
        "the call could run it: only built-in functions run here.",
        hint=f"Rewrite without {name}(); if the database's {name}() is safe, the server's operator can allow "
        f"it with --allow-function {name} (their choice, not the query's).",
    )


def _pg_marker(value: str, as_text: str, size: str, type_oid: int) -> str:
    """SQL for a cut value's marker: its first VALUE_CHARS characters and its length, or a bytea's size."""
    if type_oid == _PG_BYTEA:
        return f"pg_catalog.format('<%s bytes>', {size})"
    return (
        f"pg_catalog.format('%s…[cut: %s chars]', pg_catalog.left({as_text}, {VALUE_CHARS}), "
        f"pg_catalog.to_char(pg_catalog.char_length({as_text}), 'FM999,999,999,990'))"
    )


_RECANCEL_S = 10.0
"""How long a PostgreSQL cancel is repeated while the abandoned call's connection is still running a statement."""


class Database:
    """One database, opened so that the engine itself refuses writes; `writer` exists only with `allow_write`."""

    def __init__(
        self,
        url: str | None,
        *,
        timeout_s: float = 10.0,
        allow_write: bool = False,
        allow_privileged_role: bool = False,
        allowed_functions: Iterable[str] = (),
        role_map: RoleMapFile | None = None,
    ) -> None:
        self.timeout_s = timeout_s
        self.role_map = role_map
        """Each caller's role (`--role-map`): every call's connection acts as it (`connect`)."""
        self._role_generation = 0
        """The role map whose roles every pooled connection was checked against (`_check_role`)."""
        self.allow_privileged_role = allow_privileged_role
        self.allowed_functions = frozenset(name.lower() for name in allowed_functions)
        """Functions the operator allowed beyond the guard's lists (`--allow-function`)."""
        self._role_warned = False
        self.schema_cache = SchemaCache()
        if url is None:
            if allow_write:
                raise ValueError("the bundled sample database is read-only: give a database URL to write to")
            url = f"sqlite:///{sample_path()}"
        self._url = url
        self.dialect, password, database = _url_parts(url)
        register_secret(password)
        self.display_url = _without_password(url, password)
        if self.dialect == "sqlite":
            if not database or database == ":memory:" or not Path(database).exists():
                raise ValueError(f"SQLite database file not found: {database or '(none)'}")
            # As given, not resolved: a symlink moved to a new file is a replacement like a file moved over it.
            self.sqlite_path = Path(database)
        elif self.dialect not in ("postgresql", "mysql", "mariadb"):
            raise ValueError(f"unsupported database {self.dialect!r}: use sqlite, postgresql, mysql or mariadb")
        if role_map is not None and self.dialect != "postgresql":
            # MariaDB's SET ROLE adds a role's privileges to the login user's own, which stay: no narrowing, and no
            # row-level security to decide per caller. SQLite has no roles.
            raise ValueError(
                f"--role-map is PostgreSQL-only (SET ROLE narrows a session to one role there); {self.dialect} "
                "cannot act as a role per caller: serve one database per audience instead"
            )
        if role_map is not None and "set_config" in self.allowed_functions:
            raise ValueError(
                "--role-map with --allow-function set_config is refused: set_config('role', ...) would move a call "
                "to another mapped role"
            )
        if role_map is not None and allow_write:
            # A write statement is any one statement: SET ROLE, RESET ROLE or set_config('role', ...) would move
            # its call to another mapped role (the login role is a member of each), or back to the login role.
            raise ValueError(
                "--role-map with --allow-write is refused: a write statement could change its own role (SET ROLE), "
                "so the map would not bind writes; serve writes from a server without the map, one per role"
            )
        self._allow_write = allow_write
        self._engines: tuple[Engine, Engine | None] | None = None
        self._engines_lock = threading.Lock()

    # The engines are made at the first connection, not here: SQLAlchemy takes longer to import than the rest
    # of the server to start, and a server answers initialize before anyone needs the database.

    @property
    def engine(self) -> Engine:
        """The read-only engine (made at first use)."""
        return (self._engines or self._open_engines())[0]

    @property
    def writer(self) -> Engine | None:
        """The engine that writes, with `allow_write` only (made at first use)."""
        return (self._engines or self._open_engines())[1] if self._allow_write else None

    def _open_engines(self) -> tuple[Engine, Engine | None]:
        from sqlalchemy import create_engine, event
        from sqlalchemy.engine import make_url
        from sqlalchemy.exc import ArgumentError
        from sqlalchemy.pool import QueuePool

        with self._engines_lock:
            if self._engines is not None:
                return self._engines
            try:
                parsed = make_url(self._url)
            except ArgumentError:
                raise Refused(
                    f"The database URL {self.display_url} is not a SQLAlchemy URL.",
                    hint="The operator must fix the server's URL: dialect+driver://user:password@host:port/database.",
                ) from None
            register_secret(parsed.password)  # as SQLAlchemy reads it, should that differ from _url_parts
            writer: Engine | None = None
            if self.dialect == "sqlite":
                # QueuePool, not the SingletonThreadPool SQLAlchemy picks for "sqlite://": that one closes
                # connections other threads still use once more than five threads query at once (a crash under
                # concurrent calls).
                pool: dict[str, Any] = {"poolclass": QueuePool, "pool_size": 8, "max_overflow": 32}
                engine = create_engine("sqlite://", creator=lambda: self._sqlite_connect("ro"), **pool)
                event.listen(engine, "checkout", self._same_sqlite_file)
                if self._allow_write:
                    writer = create_engine("sqlite://", creator=lambda: self._sqlite_connect("rw"), **pool)
                    event.listen(writer, "checkout", self._same_sqlite_file)
            else:
                if self.dialect == "postgresql" and parsed.drivername == "postgresql":
                    parsed = parsed.set(drivername="postgresql+psycopg")
                if self.dialect in ("mysql", "mariadb") and "+" not in parsed.drivername:
                    parsed = parsed.set(drivername=f"{self.dialect}+pymysql")
                # A small pool: connecting costs more than most catalog reads. pre_ping replaces a connection the
                # server dropped (a restart) instead of failing the call; the session settings are re-asserted
                # at every checkout, so nothing one call did to its session survives into the next.
                # connect_timeout: a host that drops packets would otherwise hold a call for the kernel's minutes.
                # 16 at most: several clients at the per-client limit (4 calls each, server.py) still find one
                # free, so one client's slow queries cannot make another's SELECT 1 wait for a connection.
                options: dict[str, Any] = {
                    "pool_size": 2,
                    "max_overflow": 14,
                    "pool_pre_ping": True,
                    "pool_recycle": 1800,
                    "connect_args": {"connect_timeout": max(1, round(self.timeout_s))},
                }
                try:
                    engine = create_engine(parsed, **options)
                    writer = create_engine(parsed, **options) if self._allow_write else None
                except (ArgumentError, ImportError) as exc:  # a driver SQLAlchemy does not know, or not installed
                    raise Refused(
                        f"The database driver of {self.display_url} cannot be loaded: {exc}",
                        hint="The operator must install it, or name psycopg (PostgreSQL) or pymysql (MariaDB).",
                    ) from None
                event.listen(engine, "connect", self._check_role)
                if self.dialect == "postgresql":
                    event.listen(engine, "connect", _pg_json_loads)
                event.listen(engine, "checkout", self._read_only_session)
                event.listen(engine, "reset", self._reset_session)
                if writer is not None:
                    event.listen(writer, "checkout", self._timed_session)
                    event.listen(writer, "reset", self._reset_session)
            for traced in (engine, writer):
                if traced is not None:
                    event.listen(traced, "before_cursor_execute", self._statement_started)
                    event.listen(traced, "after_cursor_execute", self._statement_ended)
                    event.listen(traced, "handle_error", self._statement_failed)
            self._engines = (engine, writer)
            return self._engines

    @property
    def system(self) -> str:
        """The upstream as spans name it: `postgresql`, `mysql` (MariaDB too) or `sqlite`."""
        return "mysql" if self.dialect in ("mysql", "mariadb") else self.dialect

    def start_span(self, operation: str) -> Callable[[BaseException | None], None]:
        """`span`, for work whose start and end are apart (a stream's reads): returns what ends it."""
        return start_upstream_span(self.system, operation, **{"db.system": self.system, "db.operation.name": operation})

    def span(self, operation: str) -> AbstractContextManager[None]:
        """A child span of the current call for one round trip: `<system> <operation>`, with `db.system` and
        `db.operation.name`; the operation is a statement kind or a fixed word, never SQL text or a value."""
        return upstream_span(self.system, operation, **{"db.system": self.system, "db.operation.name": operation})

    # Every statement SQLAlchemy sends, the tools' and the catalog reads' alike, passes these three events: the
    # one place where each becomes a span. A statement names itself by its kind unless its connection says what
    # it is for (`inspector` marks catalog reads `describe`).

    def _statement_started(
        self, conn: Connection, _cursor: Any, statement: str, _params: Any, context: Any, _many: bool
    ) -> None:
        abandonment = current_abandonment()
        if abandonment is not None and abandonment.abandoned:
            # Its cancel reached the database between two statements of the call (a check's and the query's):
            # what follows would run on, uncancelled, for nobody.
            raise Unavailable("The call was abandoned; its next statement was not sent.")
        if context is None:
            return
        operation = context.execution_options.get("mcp_operation") or statement_kind(statement)
        # Not a current span: its end comes from another event, which may run in another context or not at all.
        context._mcp_span_end = start_upstream_span(
            self.system, operation, **{"db.system": self.system, "db.operation.name": operation}
        )

    def _statement_ended(
        self, _conn: Connection, _cursor: Any, _statement: str, _params: Any, context: Any, _many: bool
    ) -> None:
        end = context.__dict__.pop("_mcp_span_end", None) if context is not None else None
        if end is not None:
            end(None)

    def _statement_failed(self, failure: Any) -> None:
        context = failure.execution_context
        end = context.__dict__.pop("_mcp_span_end", None) if context is not None else None
        if end is not None:
            end(failure.original_exception)

    def _sqlite_connect(self, mode: str) -> sqlite3.Connection:
        # Read before opening: a file replaced in between is then seen as replaced at the next checkout.
        file_id = _file_id(self.sqlite_path)
        raw = sqlite3.connect(
            f"file:{self.sqlite_path.resolve()}?mode={mode}",
            uri=True,
            check_same_thread=False,
            factory=_SqliteConnection,
        )
        if mode == "ro":
            raw.execute("PRAGMA query_only=ON")
            raw.set_authorizer(_authorizer)
            # SQLite runs in this process: a value it builds (hex(zeroblob(300000000)), 600 MB) is this server's
            # memory, twice over once Python holds it. Past this length it fails the statement instead.
            raw.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, SQLITE_MOST_BYTES)
        else:
            raw.set_authorizer(_writer_authorizer)
        raw.set_progress_handler(raw.past_deadline, 10_000)
        raw.file_id = file_id
        return raw

    def _same_sqlite_file(self, dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
        from sqlalchemy.exc import DisconnectionError

        """A file replaced under the server (a fresh copy moved over it, as publishing tools do) leaves pooled
        connections reading the old one, unlinked but open, for as long as they live: such a connection is
        dropped at checkout and the pool opens one on the new file."""
        current = _file_id(self.sqlite_path)
        if current is not None and dbapi_connection.file_id != current:
            raise DisconnectionError("the SQLite file was replaced")

    def _read_only_session(self, dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
        self._session(dbapi_connection, read_only=True)

    def _timed_session(self, dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
        self._session(dbapi_connection, read_only=False)

    def _session(self, dbapi_connection: Any, *, read_only: bool) -> None:
        # The pool's own statements bypass SQLAlchemy's events: each group is one span here.
        with self.span("SET"):
            cursor = dbapi_connection.cursor()
            mode = "READ ONLY" if read_only else "READ WRITE"
            if self.dialect == "postgresql":
                cursor.execute(f"SET SESSION CHARACTERISTICS AS TRANSACTION {mode}")
                cursor.execute(f"SET statement_timeout = {int(self.timeout_s * 1000)}")
                # No JIT: it compiles at the first row, for seconds on a big plan (1.7 s for the guard's catalog
                # query, whose recursive parts the planner overestimates), which short, bounded reads never win back.
                cursor.execute("SET jit = off")
            else:
                cursor.execute(f"SET SESSION TRANSACTION {mode}")
                cursor.execute(f"SET SESSION max_statement_time = {self.timeout_s:.3f}")
            cursor.close()
            dbapi_connection.commit()

    def _reset_session(self, dbapi_connection: Any, _record: Any, _state: Any) -> None:
        """Nothing one call did to its session reaches the next: run when a connection returns to the pool.

        PostgreSQL: DISCARD ALL (settings, temporary tables, prepared statements, LISTEN, advisory locks, cursors;
        psycopg drops its own prepared-statement cache on seeing it). MariaDB: COM_RESET_CONNECTION (locks,
        variables, temporary tables, prepared statements); a connection that cannot be reset is closed instead.
        The session settings are set again at the next checkout.
        """
        with self.span("RESET"):
            dbapi_connection.rollback()
            if self.dialect == "postgresql":
                previous = dbapi_connection.autocommit
                dbapi_connection.autocommit = True  # DISCARD ALL cannot run inside a transaction block
                try:
                    dbapi_connection.execute("DISCARD ALL")
                finally:
                    dbapi_connection.autocommit = previous
            else:
                dbapi_connection._execute_command(_COM_RESET_CONNECTION, b"")
                dbapi_connection._read_ok_packet()

    def _check_role(self, dbapi_connection: Any, _record: Any) -> None:
        """Refuse a role that reaches outside the database, for every new connection (the database may have been
        down at start, or the role granted more since)."""
        with self.span("describe"):
            powers = _role_powers(self.dialect, dbapi_connection)
            if self.role_map is not None:
                # A call acts as its mapped role: that role must not reach further than the login role may.
                powers += _mapped_role_powers(dbapi_connection, self.role_map.current().all_roles)
            dbapi_connection.rollback()
        if not powers:
            return
        what = ", ".join(powers)
        if self.allow_privileged_role:
            if not self._role_warned:
                logger.warning("connected as a privileged role (%s), as --allow-privileged-role allows", what)
                self._role_warned = True
            return
        raise PrivilegedRole(
            f"Refused: the database role can reach outside the database ({what}), which a read-only inspector must "
            "not. Connect as a least-privilege role: "
            + LEAST_PRIVILEGE_SQL["postgresql" if self.dialect == "postgresql" else "mysql"],
            hint="See docs/db-least-privilege.md; or start with --allow-privileged-role (the operator's choice).",
        )

    @contextmanager
    def connect(self, *, write: bool = False, max_rows: int | None = None) -> Iterator[Connection]:
        """A connection with the statement deadline armed; rolled back at the end unless `write` commits it.

        While it is out, a call the helpers abandon (its deadline, its client's cancel) cancels the statement in
        the database: PostgreSQL's cancel request, SQLite's interrupt, MariaDB's KILL QUERY. `max_rows` caps what
        a top-level SELECT may send back on MariaDB (sql_select_limit), whose streamed results otherwise must be
        read to their end before the connection can be used again.
        """
        from sqlalchemy.exc import DBAPIError, SQLAlchemyError, StatementError

        engine = self.writer if write else self.engine
        if engine is None:
            raise Refused("Writing is off.", hint="Start the server with --allow-write and a database URL.")
        # Before any connection is taken: a caller the role map refuses sends nothing to the database.
        role = self._call_role()
        connected = False
        try:
            with engine.connect() as connection:
                connected = True
                if role is not None:
                    self._set_role(connection, role)
                raw: Any = connection.connection.dbapi_connection
                if isinstance(raw, _SqliteConnection):
                    raw.deadline = time.monotonic() + self.timeout_s
                if max_rows is not None and self.dialect in ("mysql", "mariadb"):
                    connection.exec_driver_sql(f"SET SESSION sql_select_limit = {int(max_rows)}")
                try:
                    with cancel_on_abandon(functools.partial(self._cancel, raw)):
                        yield connection
                    if write:
                        connection.commit()
                finally:
                    if isinstance(raw, _SqliteConnection):
                        raw.deadline = 0.0
                    connection.rollback()
        except DBAPIError as exc:
            raise self._failure(exc, connecting=not connected) from None
        except StatementError as exc:  # SQLAlchemy's own, before anything reached the database
            if placeholder := re.search(r"bind parameter '([^']+)'", str(exc.orig)):
                name = placeholder.group(1)
                raise InvalidArgument(
                    f"No value for the placeholder :{name}.", hint=f'Add it to params: {{"{name}": ...}}.'
                ) from None
            raise InvalidArgument(f"The statement could not be sent: {type(exc.orig).__name__}.") from None
        except SQLAlchemyError as exc:
            raise Unavailable(f"The database call failed: {type(exc).__name__}.") from None

    def _call_role(self) -> str | None:
        """The role the current call acts as (`roles.call_role`), or None: no map, or the server's own work."""
        if self.role_map is None:
            return None
        from mcp_server_db.roles import call_role

        role = call_role()
        if self.role_map.generation != self._role_generation and self._engines is not None:
            # A reloaded map may name roles no pooled connection has checked: new connections check them all.
            self._role_generation = self.role_map.generation
            self._engines[0].dispose()
        return role

    def _set_role(self, connection: Connection, role: str) -> None:
        """Act as `role` from here on, inside the call's transaction, before its first statement (the guard's
        catalog and plan reads too, which then see what the role sees). A session-wide SET, not SET LOCAL: a call
        that commits keeps its role to its end; the rollback at the end of `connect` undoes it, and the pool's
        DISCARD ALL (`_reset_session`) runs before the connection serves anyone else."""
        from sqlalchemy.exc import DBAPIError

        from mcp_server_db.roles import quoted_role

        try:
            connection.exec_driver_sql(f"SET ROLE {quoted_role(role)}", execution_options={"mcp_operation": "SET"})
        except DBAPIError as exc:
            message = str(exc.orig).strip().splitlines()[0][:300] if exc.orig is not None else type(exc).__name__
            raise Unavailable(
                f"The call could not act as its database role {role}: {message}",
                hint="The call ran nothing. The operator must create the role and grant it to the server's login "
                "role (GRANT <role> TO <login role>; docs/identity.md).",
            ) from None

    def check_statement(self, connection: Connection, verdict: Verdict) -> None:
        """Refuse a statement that may run code other than the built-ins known to change nothing, judged where
        the names lead (PostgreSQL: the catalog, then the plan; MariaDB: the views' definitions).

        PostgreSQL resolves a function name among every schema on the search path, by argument types: beside
        pg_catalog.upper(text), a public.upper(integer) is what `upper(1)` runs, and a search path that lists
        pg_catalog late puts a same-typed public.upper first. A type name resolves along the same path: a domain
        named `datetime`, which PostgreSQL has no built-in of, is what `'x'::datetime` makes, running its CHECK;
        an operator is a function too (a public `+` for text runs for `'a'::text + 'b'::text`); reading a view
        runs the functions in its definition, reading a table those of its row-level policies, reading a
        foreign table its wrapper (file_fdw runs a program, postgres_fdw asks another server), reading a parent
        table its partitions and inheritance children; and converting a value runs the cast its type's owner
        defined (`CREATE CAST (addr AS text) WITH FUNCTION f`), implicitly too. The catalog is read first, before
        anything is planned (planning runs immutable functions on constants); then the plan of reading the
        relations named (`check_plan`).
        Functions, types and operators of an installed extension count as built-ins when they are immutable or
        stable; functions the operator allowed always run. MariaDB runs its built-in whatever a stored function
        is named, and SQLite has no functions the server did not register.
        """
        if self.dialect in ("mysql", "mariadb"):
            self._check_views(connection, verdict.relations)
        if self.dialect != "postgresql" or not (verdict.calls | verdict.types | verdict.operators | verdict.relations):
            return
        found, deep = connection.exec_driver_sql(
            _PG_NAMES,
            {
                "functions": sorted(verdict.calls - self.allowed_functions),
                "types": sorted(verdict.types),
                "operators": sorted(verdict.operators),
                "relations": sorted(verdict.relations),
                "allowed": sorted(self.allowed_functions),
            },
            execution_options=_CATALOG_READ,
        ).one()
        if found is not None:
            raise _own_code_refusal(*found)
        if not deep:  # plain tables of built-in types: a read of their rows runs nothing else
            return
        named, reached = self._check_catalog(connection, verdict=verdict)
        if named:
            self.check_plan(connection, named, judged=reached)

    def _check_catalog(
        self, connection: Connection, *, verdict: Verdict | None = None, relations: Iterable[str] = ()
    ) -> tuple[list[str], set[tuple[str, str]]]:
        """One catalog read (`_PG_OWN_CODE`): refuse the first code found that may not run; else the relations
        named that exist (as SQL names) and every relation reached, as (schema, name)."""
        names = {
            "spelled": sorted(verdict.types | verdict.calls) if verdict else [],
            "relations": sorted(verdict.relations if verdict else relations),
            "allowed": sorted(self.allowed_functions),
        }
        found, named, schemas, relnames = connection.exec_driver_sql(
            _PG_OWN_CODE, names, execution_options=_CATALOG_READ
        ).one()
        if found is not None:
            raise _own_code_refusal(*found)
        return list(named), set(zip(schemas, relnames, strict=True))

    def check_plan(self, connection: Connection, relations: list[str], *, judged: set[tuple[str, str]]) -> None:
        """Refuse reading relations whose plan runs what may not run (PostgreSQL): the database is asked, under
        the same role and settings, how it reads each whole (`EXPLAIN (VERBOSE, FORMAT JSON)` of one read each,
        which plans without executing: views expanded, partitions and inheritance children added, row-level
        policies applied, SQL functions inlined), and every node is walked (`plan_facts`). A node that is not a
        plain read (a foreign table under a parent, a custom scan) is refused; the functions its expressions
        name, and any relation it scans that the catalog check did not reach (`judged`), are judged as the
        catalog check judges them, in one more catalog read, made only when there are any (a plain table's plan
        names none). The statement's own plan is not asked for: its calls are the parser's to judge by name, and
        planning folds its constants into the plan (`repeat('x', 300000000)` would be 300 MB of EXPLAIN). A plan
        that cannot be had fails the call as the statement would; one that cannot be read refuses it."""
        from mcp_server_db.plan import plan_facts

        # Each relation read whole (a whole-row value keeps every column, and the functions computing them) in a
        # subquery of its own: planned apart, as init plans, with no join order to search among them.
        reads = ", ".join(f"(SELECT r FROM {name} AS r LIMIT 1)" for name in relations)  # noqa: S608 - regclass::text
        explained = connection.exec_driver_sql(
            f"EXPLAIN (VERBOSE, FORMAT JSON) SELECT {reads}",
            execution_options=_CATALOG_READ,
        ).scalar()
        facts = plan_facts(explained)
        if unjudged := facts.relations - judged:
            quoted = [".".join('"' + part.replace('"', '""') + '"' for part in pair) for pair in unjudged]
            self._check_catalog(connection, relations=quoted)
        if facts.functions:
            called = sorted(facts.functions)
            unsafe = connection.exec_driver_sql(
                _PG_PLAN_FUNCTIONS,
                {
                    "schemas": [schema for schema, _ in called],
                    "names": [name for _, name in called],
                    "allowed": sorted(self.allowed_functions),
                },
                execution_options=_CATALOG_READ,
            ).first()
            if unsafe is not None:
                raise _own_code_refusal("plan function", *unsafe)

    def _check_views(self, connection: Connection, relations: Iterable[str], depth: int = 0) -> None:
        """MariaDB: a view runs as its definer, stored functions and all, for whoever reads it; its definition is
        judged as a statement is, and so are the views it reads in turn."""
        from mcp_server_db.guard import check_read_only

        named = [relation.rpartition(".") for relation in relations]
        if not named:
            return
        views = connection.exec_driver_sql(
            "SELECT TABLE_SCHEMA, TABLE_NAME, VIEW_DEFINITION, DATABASE() FROM information_schema.VIEWS "
            "WHERE TABLE_NAME IN %s",
            ([name for _, _, name in named],),
            execution_options={"mcp_operation": "describe"},
        ).all()
        for schema, name, definition, current in views:
            if not any(name == wanted and (given or current) == schema for given, _, wanted in named):
                continue
            if depth > 8 or not definition:
                raise Refused(
                    f"Refused: the view {schema}.{name} cannot be checked (its definition is not visible to this role, "
                    "or views nest too deep); a view runs what its definition calls.",
                    hint="Query the tables under it, or grant the role SHOW VIEW.",
                )
            try:
                verdict = check_read_only(definition, self.dialect, self.allowed_functions)
            except Refused as exc:
                raise Refused(
                    f"Refused: reading the view {schema}.{name} runs its definition, as its definer, and that is not "
                    f"allowed here: {exc.args[0] if exc.args else exc}",
                    hint="Query the tables under it.",
                ) from None
            self._check_views(connection, verdict.relations, depth + 1)

    def _cancel(self, raw: Any) -> None:
        """Stop whatever statement `raw` runs now; called from another thread when its call is abandoned."""
        if isinstance(raw, sqlite3.Connection):
            raw.interrupt()
        elif self.dialect == "postgresql":
            # PostgreSQL ignores a cancel that reaches the backend between two statements, and a statement sent
            # just before the abandonment was seen would then run on for nobody (seen under load: the guard's
            # catalog reads and EXPLAIN come before the query). So cancel again while the connection is busy.
            from psycopg.pq import TransactionStatus

            deadline = time.monotonic() + _RECANCEL_S
            raw.cancel_safe(timeout=5.0)
            while time.monotonic() < deadline:
                time.sleep(0.1)
                if raw.info.transaction_status != TransactionStatus.ACTIVE:
                    break
                raw.cancel_safe(timeout=5.0)
        else:
            # MariaDB has no cancel request on the connection itself: a second, short connection kills the query.
            cargs, cparams = self.engine.dialect.create_connect_args(self.engine.url)
            killer = self.engine.dialect.loaded_dbapi.connect(*cargs, **{**cparams, "connect_timeout": 5})
            try:
                with killer.cursor() as cursor:
                    cursor.execute(f"KILL QUERY {int(raw.thread_id())}")
            finally:
                killer.close()
        logger.info("cancelled the statement of an abandoned call")

    def close(self) -> None:
        for engine in self._engines or ():
            if engine is not None:
                engine.dispose()

    def _failure(self, exc: DBAPIError, *, connecting: bool) -> Exception:
        message = str(exc.orig).strip().splitlines()[0][:300] if exc.orig is not None else type(exc).__name__
        # Failing to connect is never the statement's fault, whatever the driver calls it (psycopg and
        # PyMySQL both raise OperationalError for a refused or cut connection, as they do for bad SQL).
        if connecting or exc.connection_invalidated or isinstance(exc.orig, OSError):
            return Unavailable(
                f"The database at {self.display_url} is unreachable: {message}",
                hint="The call changed nothing; try again once the database is back.",
            )
        # Told by the engine's code, never by words in its message: a column named `timeout` is no timeout.
        if self._stopped(exc.orig):
            return Unavailable(
                f"The statement ran past the {self.timeout_s:g} s timeout and was stopped.",
                hint="Add a WHERE or LIMIT, or ask for less.",
            )
        if column := _missing_column(self.dialect, exc.orig, message):
            return UnknownColumn(column, f"The database refused the statement: {message}")
        return InvalidArgument(f"The database refused the statement: {message}")

    def _stopped(self, orig: Any) -> bool:
        """The statement was stopped: its deadline, or its call abandoned (the cancel is this server's)."""
        if isinstance(orig, sqlite3.Error):
            return getattr(orig, "sqlite_errorcode", None) == sqlite3.SQLITE_INTERRUPT
        if self.dialect == "postgresql":
            return getattr(orig, "sqlstate", None) == "57014"  # query_canceled: statement_timeout or a cancel
        args: tuple[Any, ...] = getattr(orig, "args", ())
        return bool(args) and args[0] in _MY_STOPPED

    def execute(self, connection: Connection, sql: str, params: dict[str, Any] | None = None) -> Any:
        from sqlalchemy import text

        return connection.execute(text(sql), params or {})

    def stream(
        self, connection: Connection, sql: str, params: dict[str, Any] | None, *, buffer: int, value_bytes: int
    ) -> RowStream:
        """Rows as the engine sends them, at most `buffer` held at once (PostgreSQL: a server-side cursor;
        SQLite steps lazily anyway; MariaDB: an unbuffered cursor, bounded by `connect(max_rows=...)`), no value
        over `value_bytes` (PostgreSQL: cut in the database; SQLite: its length limit; MariaDB: its packet size)."""
        from sqlalchemy import text

        progress = Progress()  # from before the statement: the first rows can be what takes long
        cuts, inline = False, None
        if self.dialect == "postgresql":
            # The columns and their types, from a plan: LIMIT 0 runs nothing of the statement.
            probe = connection.execute(text(f"SELECT * FROM ({sql}\n) AS q LIMIT 0"), params or {})  # noqa: S608
            described: Any = probe.cursor.description  # psycopg's: a type's OID as its type_code
            columns = [(str(name), int(type_code)) for name, type_code, *_ in described]
            probe.close()
            if len(columns) >= _PG_MOST_COLUMNS:
                inline = f"mcp-cut-{secrets.token_hex(8)}:"  # no stored value can know it
                sql = _pg_cut_sql(sql, columns, value_bytes, inline)
            elif columns:
                sql, cuts = _pg_cut_sql(sql, columns, value_bytes), True
        one_at_a_time = self.dialect in ("mysql", "mariadb")
        rows_held = 1 if one_at_a_time else max(buffer, 1)
        streaming = connection.execution_options(stream_results=True, max_row_buffer=rows_held)
        result = streaming.execute(text(sql), params or {})
        return RowStream(self, result, progress, cuts=cuts, inline_cuts=inline, one_at_a_time=one_at_a_time)

    def inspector(self, connection: Connection) -> Any:
        """The catalog reader; from here on the connection's statements are catalog reads (`describe` spans)."""
        from sqlalchemy import inspect

        connection.execution_options(mcp_operation="describe")
        return inspect(connection)

    def schema_version(self, connection: Connection) -> int | None:
        """A number that changes whenever the schema does, if the engine has a cheap one (SQLite); else None."""
        if self.dialect != "sqlite":
            return None
        value = connection.exec_driver_sql("PRAGMA schema_version").scalar()
        if value is None:
            return None
        # A replacement file can have reached the same schema version: the file's identity is part of it.
        raw: Any = connection.connection.dbapi_connection
        return hash((getattr(raw, "file_id", None), int(value)))
