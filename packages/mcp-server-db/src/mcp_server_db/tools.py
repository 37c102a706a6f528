"""The tools: find and describe schema objects, run and explain read-only queries, and (opt-in) write."""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any, Literal

from mcp_server_core import (
    Cursor,
    InvalidArgument,
    Limit,
    Rendered,
    Toolset,
    audit_target,
    decode_cursor,
    did_you_mean,
    encode_cursor,
)
from pydantic import BaseModel, Field, PrivateAttr

from mcp_server_db.rendering import VALUE_BYTES, VALUE_CHARS, TableInfo, cell, columns_text, json_value, was_cut

if TYPE_CHECKING:
    from mcp_server_db.database import Database

# The catalog (SQLAlchemy) and the guard (sqlglot) are imported by the tools at their first call: a server
# answers initialize without paying for either (bench/startup.py).

Kind = Literal["schema", "table", "view", "column", "index"]
QUERY_BYTES = 12_000
QUERY_ROWS = 100
"""The most rows one run_query answer holds; past it (or past QUERY_BYTES) it says more follow."""


# --- results ---------------------------------------------------------------------------------------------


class DbObject(BaseModel):
    kind: str
    name: str  # table.column for columns and indexes
    info: str | None = None


class ObjectList(Rendered):
    objects: list[DbObject]
    next_cursor: str | None = None

    def render(self) -> str:
        if any(o.info for o in self.objects):
            lines = [f"{o.kind} {o.name}" + (f" {o.info}" if o.info else "") for o in self.objects]
        else:  # names only: one line per kind, as `.tables` lists them
            by_kind: dict[str, list[str]] = {}
            for o in self.objects:
                by_kind.setdefault(o.kind, []).append(o.name)
            lines = [f"{kind}: {', '.join(names)}" for kind, names in by_kind.items()]
        if not lines:
            lines.append("No object matches.")
        if self.next_cursor:
            lines.append(f"next_cursor={self.next_cursor}")
        return "\n".join(lines)


class TableDescriptions(Rendered):
    # Plain objects in the schema: the nested models would cost tools/list 1.5 kB; the keys are TableInfo's.
    tables: list[dict[str, Any]]
    _described: list[TableInfo] | None = PrivateAttr(default=None)  # what `tables` was dumped from

    @classmethod
    def of(cls, described: list[TableInfo]) -> TableDescriptions:
        result = cls(tables=[t.model_dump(mode="json", exclude_none=True) for t in described])
        result._described = described
        return result

    def render(self) -> str:
        described = self._described or [TableInfo.model_validate(t) for t in self.tables]
        return "\n\n".join(t.render() for t in described)


class QueryResult(Rendered):
    columns: list[str]
    rows: list[list[Any]]
    truncated: bool
    """More rows followed (`more_rows`), or a value was cut."""
    more_rows: bool = False
    _lines: list[str] | None = PrivateAttr(default=None)  # the rows as rendered, when run_query measured them

    def render(self) -> str:
        lines = ["\t".join(self.columns)]
        lines += self._lines if self._lines is not None else ["\t".join(cell(v) for v in row) for row in self.rows]
        # A complete result needs no footer: its rows are all there is.
        if self.more_rows:
            lines.append(f"(the first {len(self.rows)} rows; more follow: add LIMIT/OFFSET or narrow the WHERE)")
        elif self.truncated:
            lines.append(f"(values over {VALUE_CHARS:,} characters cut)")
        elif not self.rows:
            lines.append("(no rows)")
        return "\n".join(lines)


class ValueCounts(Rendered):
    values: list[list[Any]]  # [value, count], most common first
    distinct: int
    nulls: int

    def render(self) -> str:
        lines = [f"{cell(value)}\t{count}" for value, count in self.values]
        lines.append(f"({self.distinct} distinct, {self.nulls} NULL)")
        return "\n".join(lines)


class Executed(Rendered):
    rows_affected: int | None = None
    returned: list[list[Any]] = Field(default_factory=list)

    def render(self) -> str:
        lines = ["\t".join(cell(v) for v in row) for row in self.returned]
        lines.append(
            "Committed." + (f" {self.rows_affected} row(s) affected." if self.rows_affected is not None else "")
        )
        return "\n".join(lines)


class QueryPlan(Rendered):
    plan: list[str]

    def render(self) -> str:
        return "\n".join(self.plan)


# --- helpers ---------------------------------------------------------------------------------------------


def _matches(pattern: str, name: str) -> bool:
    glob = pattern.replace("%", "*").replace("_", "?") if "%" in pattern else pattern
    if not any(ch in glob for ch in "*?["):
        return glob.lower() in name.lower()
    return fnmatch.fnmatch(name.lower(), glob.lower())


# --- the toolsets ----------------------------------------------------------------------------------------


def schema_toolset(db: Database) -> Toolset:
    toolset = Toolset("schema", "Find and describe tables, views, columns and indexes")

    @toolset.tool(title="Find objects", read_only=True, open_world=False)
    def find_objects(
        pattern: str = "*",
        kinds: list[Kind] | None = None,
        detail: Literal["names", "summary", "full"] = "names",
        limit: Annotated[Limit, Field(le=500)] = 100,
        cursor: Cursor = None,
    ) -> ObjectList:
        """Use to find tables, views, columns, indexes or schemas by name."""
        from mcp_server_db.catalog import other_schemas, per_table, relations

        wanted = set(kinds or ["table", "view"])
        scope = json.dumps([pattern, sorted(wanted), detail])
        start = int(decode_cursor(cursor, scope=scope)["offset"]) if cursor else 0
        found: list[DbObject] = []
        need_columns = detail != "names" or "column" in wanted
        with db.connect() as connection:
            inspector = db.inspector(connection)
            schemas = [None, *other_schemas(db, inspector)]
            if "schema" in wanted:
                default = inspector.default_schema_name or "main"
                found += [
                    DbObject(kind="schema", name=s or default) for s in schemas if _matches(pattern, s or default)
                ]
            # Columns and indexes of a whole schema in one catalog query each, not one per table.
            columns = per_table(inspector.get_multi_columns, schemas) if need_columns else {}
            indexes = per_table(inspector.get_multi_indexes, schemas) if "index" in wanted else {}
            for rel in relations(db, inspector):
                cols = columns.get((rel.schema, rel.name), [])
                if rel.kind in wanted and _matches(pattern, rel.qualified):
                    info = None
                    if detail == "summary":
                        info = f"({len(cols)} columns)"
                    elif detail == "full":
                        info = f"({columns_text(cols)})"
                    found.append(DbObject(kind=rel.kind, name=rel.qualified, info=info))
                if "column" in wanted:
                    for c in cols:
                        if _matches(pattern, c["name"]):
                            info = None if detail == "names" else str(c["type"])
                            found.append(DbObject(kind="column", name=f"{rel.qualified}.{c['name']}", info=info))
                for ix in indexes.get((rel.schema, rel.name), []):
                    if ix["name"] and _matches(pattern, ix["name"]):
                        info = None if detail == "names" else f"({', '.join(map(str, ix['column_names']))})"
                        found.append(DbObject(kind="index", name=f"{rel.qualified}.{ix['name']}", info=info))
        page = found[start : start + limit]
        more = start + limit < len(found)
        return ObjectList(
            objects=page, next_cursor=encode_cursor({"offset": start + limit}, scope=scope) if more else None
        )

    @toolset.tool(title="Describe tables", read_only=True, open_world=False)
    def describe_tables(
        tables: Annotated[list[str], Field(min_length=1, max_length=50)],
        sample_rows: Annotated[int, Field(ge=0, le=20)] = 0,
    ) -> TableDescriptions:
        """Use to see columns, keys, indexes and checks of tables."""
        from mcp_server_db.catalog import describe

        with db.connect() as connection:
            described = describe(db, connection, tables, sample=sample_rows)
        return TableDescriptions.of(described)

    return toolset


def query_toolset(db: Database) -> Toolset:
    toolset = Toolset("query", "Run read-only SQL")

    @toolset.tool(title="Run query", read_only=True, open_world=False, budget=QUERY_BYTES + 1_000)
    def run_query(sql: str, params: dict[str, Any] | None = None) -> QueryResult:
        """Use to run one SELECT; params fill its :name placeholders."""
        from mcp_server_db.guard import check_read_only

        verdict = check_read_only(sql, db.dialect, db.allowed_functions)
        statement, explain = verdict.statement, verdict.explain
        if explain:
            statement = _explain_sql(db, statement)
        # Bounded whatever the query returns: rows stream from the engine, at most a page is held, long values
        # are cut, and the page stops at QUERY_ROWS or the byte budget in text and in structured content alike.
        # No cursor: SQL pages itself (LIMIT/OFFSET), which the model writes anyway, and the schema stays small.
        with (
            _close_columns_named(db, verdict.relations),
            db.connect(max_rows=None if explain else QUERY_ROWS + 1) as connection,
        ):
            db.check_statement(connection, verdict)
            try:
                if explain:  # a plan is small, and PostgreSQL cannot DECLARE a cursor for EXPLAIN
                    result = db.execute(connection, statement, params)
                else:
                    # Ten rows at a time: a page rarely needs more than its budget's worth, and a row can be 1 MB.
                    result = db.stream(connection, statement, params, buffer=FETCH_ROWS, value_bytes=VALUE_BYTES)
            except KeyError as exc:
                raise InvalidArgument(f"No value for placeholder {exc}.", hint="Add it to params.") from None
            columns = list(map(str, result.keys()))
            rows: list[list[Any]] = []
            lines: list[str] = []  # each row's text line, measured here and rendered as is
            text_used = structured_used = 0
            more = cut = False
            for row in _rows(result, QUERY_ROWS + 1):
                if len(rows) == QUERY_ROWS:
                    more = True
                    break
                values = [json_value(v) for v in row]
                line = "\t".join([cell(v) for v in values])
                text_used += len(line.encode()) + 1
                structured_used += len(json.dumps(values, default=str, ensure_ascii=False).encode()) + 1
                if rows and (text_used > QUERY_BYTES or structured_used > QUERY_BYTES):
                    more = True
                    break
                cut = cut or any(was_cut(v) for v in values)
                rows.append(values)
                lines.append(line)
            result.close()
        query_result = QueryResult(columns=columns, rows=rows, truncated=more or cut, more_rows=more)
        query_result._lines = lines
        return query_result

    return toolset


def analysis_toolset(db: Database) -> Toolset:
    # Off by default (tools/list budget): run_query takes EXPLAIN SELECT and GROUP BY too. --toolsets all adds it.
    toolset = Toolset("analysis", "Explain queries and profile columns", default=False)

    @toolset.tool(title="Explain query", read_only=True, open_world=False)
    def explain_query(
        sql: str,
        params: dict[str, Any] | None = None,
    ) -> QueryPlan:
        """Use to see the plan of a SELECT without running it."""
        from mcp_server_db.guard import check_read_only

        verdict = check_read_only(sql, db.dialect, db.allowed_functions)
        with _close_columns_named(db, verdict.relations), db.connect() as connection:
            db.check_statement(connection, verdict)  # planning folds constant calls and casts: it runs them too
            result = db.execute(connection, _explain_sql(db, verdict.statement), params)
            plan = [" | ".join(cell(v) for v in row) for row in result.fetchmany(500)]
        return QueryPlan(plan=plan)

    @toolset.tool(title="Distinct values", read_only=True, open_world=False)
    def distinct_values(
        table: str,
        column: str,
        limit: Annotated[Limit, Field(le=200)] = 20,
    ) -> ValueCounts:
        """Use to see the most common values of a column, with counts."""
        from mcp_server_db.catalog import distinct_values as catalog_distinct_values
        from mcp_server_db.catalog import require, resolve

        with db.connect() as connection:
            inspector = db.inspector(connection)
            (rel,) = resolve(db, inspector, [table], db.schema_version(connection))
            require(column, [c["name"] for c in inspector.get_columns(rel.name, schema=rel.schema)], noun="column")
            values, distinct, nulls = catalog_distinct_values(db, connection, rel, column, limit)
        return ValueCounts(values=values, distinct=distinct, nulls=nulls)

    return toolset


def write_toolset(db: Database, *, before_write: Callable[[], None], after_write: Callable[[], None]) -> Toolset:
    """Present only with --allow-write: the server registers it, and nothing else can write."""
    toolset = Toolset("write", "Change data and schema (--allow-write)")

    @toolset.tool(title="Execute statement", read_only=False, destructive=True, idempotent=False, open_world=False)
    def execute_statement(sql: str, params: dict[str, Any] | None = None) -> Executed:
        """Use to run one INSERT, UPDATE, DELETE or DDL statement; it commits, or changes nothing."""
        from mcp_server_db.guard import check_one_statement, written_tables

        statement = check_one_statement(sql, db.dialect)
        before_write()  # the schema as it was, for after_write to compare with
        for table in written_tables(statement, db.dialect):
            audit_target(f"table:{table}")  # what the write changes, in its call's audit line
        with db.connect(write=True) as connection:
            try:
                result = db.execute(connection, statement, params)
            except KeyError as exc:
                raise InvalidArgument(f"No value for placeholder {exc}.", hint="Add it to params.") from None
            returned = [[json_value(v) for v in row] for row in result.fetchmany(100)] if result.returns_rows else []
            affected = result.rowcount if result.rowcount is not None and result.rowcount >= 0 else None
        after_write()  # a CREATE or ALTER is announced now, not at the next poll
        return Executed(rows_affected=affected, returned=returned)

    return toolset


FETCH_ROWS = 10


def _rows(result: Any, most: int) -> Iterator[Any]:
    """Up to `most` rows, fetched `FETCH_ROWS` at a time, so stopping early leaves the rest unread."""
    taken = 0
    while taken < most and (batch := result.fetchmany(min(FETCH_ROWS, most - taken))):
        for row in batch:
            taken += 1
            yield row


@contextmanager
def _close_columns_named(db: Database, relations: frozenset[str]) -> Iterator[None]:
    """A column the database did not find is named with the columns of the tables the statement reads, the close
    ones first (read on a connection of their own: PostgreSQL's transaction is over after the error)."""
    from mcp_server_db.database import UnknownColumn

    try:
        yield
    except UnknownColumn as exc:
        from mcp_server_db.catalog import known_relations

        wanted = {relation.rpartition(".")[2].strip('"`').lower() for relation in relations}
        columns: dict[str, None] = {}
        tables: list[str] = []
        with db.connect() as connection:
            inspector = db.inspector(connection)
            for rel in known_relations(db, inspector, db.schema_version(connection)).values():
                if rel.name.lower() in wanted and len(tables) < 10:
                    tables.append(rel.qualified)
                    columns |= dict.fromkeys(c["name"] for c in inspector.get_columns(rel.name, schema=rel.schema))
        if not tables:
            raise
        raise InvalidArgument(
            f"No column {exc.column!r} in {', '.join(tables)} ({exc.args[0]}).",
            hint=did_you_mean(exc.column, columns, noun="column"),
        ) from None


def _explain_sql(db: Database, statement: str) -> str:
    return f"EXPLAIN QUERY PLAN {statement}" if db.dialect == "sqlite" else f"EXPLAIN {statement}"
