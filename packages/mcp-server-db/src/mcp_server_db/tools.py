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
    Untrusted,
    audit_target,
    decode_cursor,
    did_you_mean,
    encode_cursor,
    one_line,
    take_within_budget,
)
from mcp_server_core.conventions.budget import json_size
from mcp_server_core.conventions.tools import DEFAULT_BUDGET
from mcp_server_core.conventions.untrusted import from_one_line
from pydantic import BaseModel, Field, PrivateAttr

from mcp_server_db.rendering import (
    VALUE_BYTES,
    VALUE_CHARS,
    TableInfo,
    cell,
    columns_text,
    names_in_line,
    page_rows,
)

if TYPE_CHECKING:
    from mcp_server_db.database import Database

# The catalog (SQLAlchemy) and the guard (sqlglot) are imported by the tools at their first call: a server
# answers initialize without paying for either (bench/startup.py).

Kind = Literal["schema", "table", "view", "column", "index"]
QUERY_BYTES = 12_000
QUERY_ROWS = 100
"""The most rows one run_query answer holds; past it (or past QUERY_BYTES) it says more follow."""
PAGE_BYTES = DEFAULT_BUDGET - 1_000
"""What the items of one answer of the other tools may take, as text and as JSON each: the rest of the budget is
left to headers and notes, so a page is never cut after it is made."""


# --- results ---------------------------------------------------------------------------------------------


class DbObject(BaseModel):
    kind: str
    name: str  # table.column for columns and indexes, each part in its one-line form
    info: str | None = None

    def size(self) -> int:
        """Bytes it takes in an answer: its line of text and its JSON."""
        return 2 * json_size(self.model_dump(exclude_none=True))


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


def _one_lined(value: Any) -> Any:
    """A described table's JSON with every name, type, default, check and comment in its one-line form."""
    if isinstance(value, str):
        return one_line(value)
    if isinstance(value, list):
        return [_one_lined(item) for item in value]
    if isinstance(value, dict):
        return {key: _one_lined(item) for key, item in value.items()}
    return value


def _table_json(info: TableInfo) -> dict[str, Any]:
    found: dict[str, Any] = _one_lined(info.model_dump(mode="json", exclude_none=True, exclude={"sample"}))
    if info.sample is not None:
        found["sample"] = info.sample  # values are data: as the database gave them, cut at VALUE_CHARS
    return found


def _table_size(info: TableInfo) -> int:
    return json_size(info.render()) + json_size(_table_json(info))


def _fit_table(info: TableInfo, room: int) -> TableInfo:
    """The table with as many of its columns (and their sample values) as fit `room` bytes of text and JSON."""
    if _table_size(info) <= room:
        return info
    bare = info.model_copy(update={"columns": [], "sample": [[] for _ in info.sample] if info.sample else None})
    left = room - _table_size(bare) - 100
    kept = 0
    for index, column in enumerate(info.columns):
        sample = [row[index] for row in info.sample or [] if index < len(row)]
        left -= 2 * json_size(column.model_dump(exclude_none=True)) + 2 * json_size(sample) + 40
        if left < 0:
            break
        kept = index + 1
    kept = max(kept, 1)
    return info.model_copy(
        update={
            "columns": info.columns[:kept],
            "sample": [row[:kept] for row in info.sample] if info.sample is not None else None,
            "more_columns": len(info.columns) - kept,
        }
    )


class TableDescriptions(Rendered):
    # Plain objects in the schema: the nested models would cost tools/list 1.5 kB; the keys are TableInfo's.
    tables: list[dict[str, Any]]
    more_tables: list[str] = Field(default_factory=list)
    """Tables asked for that did not fit this answer: describe them in another call."""
    _described: list[TableInfo] | None = PrivateAttr(default=None)  # what `tables` was dumped from

    @classmethod
    def of(cls, described: list[TableInfo], budget: int = PAGE_BYTES) -> TableDescriptions:
        """The tables that fit `budget` as text and as JSON together (the first cut to its columns that fit),
        the rest named for another call."""
        fitted = [_fit_table(described[0], 2 * budget)] if described else []
        spent = _table_size(fitted[0]) if fitted else 0
        fitted += described[1 : 1 + take_within_budget(described[1:], _table_size, 2 * budget, spent=spent)]
        rest = [one_line(t.name) for t in described[len(fitted) :]]
        result = cls(tables=[_table_json(t) for t in fitted], more_tables=rest)
        result._described = fitted
        return result

    def render(self) -> str:
        described = self._described or [TableInfo.model_validate(t) for t in self.tables]
        parts = [t.render() for t in described]
        if self.more_tables:
            parts.append(f"(not shown, to fit the answer: {', '.join(self.more_tables)}; describe them separately)")
        return "\n\n".join(parts)


class QueryResult(Rendered):
    columns: list[str]
    """In their one-line forms."""
    rows: list[list[Any]]
    truncated: bool
    """More rows or columns followed (`more_rows`, `more_columns`), or a value was cut."""
    more_rows: bool = False
    more_columns: int | None = None
    _lines: list[str] | None = PrivateAttr(default=None)  # the rows as rendered, when run_query measured them

    def render(self) -> str:
        lines = ["\t".join(self.columns)]
        lines += self._lines if self._lines is not None else ["\t".join(cell(v) for v in row) for row in self.rows]
        if self.more_columns:
            total = len(self.columns) + self.more_columns
            lines.append(f"(the first {len(self.columns):,} of {total:,} columns fit: select fewer columns)")
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
    more_returned: bool = False
    """RETURNING gave more rows or columns than the answer shows."""

    def render(self) -> str:
        lines = ["\t".join(cell(v) for v in row) for row in self.returned]
        if self.more_returned:
            lines.append("(more rows or columns were returned than fit here)")
        lines.append(
            "Committed." + (f" {self.rows_affected} row(s) affected." if self.rows_affected is not None else "")
        )
        return "\n".join(lines)


class QueryPlan(Rendered):
    plan: list[str]
    """Each line in its one-line form."""

    def render(self) -> str:
        return "\n".join(self.plan)


def _within(items: list[Any], size: Callable[[Any], int]) -> list[Any]:
    """The leading items that fit one answer as text and as JSON (each item's `size` counts both)."""
    return items[: take_within_budget(items, size, 2 * PAGE_BYTES)]


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
                    DbObject(kind="schema", name=one_line(s or default))
                    for s in schemas
                    if _matches(pattern, s or default)
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
                    found.append(DbObject(kind=rel.kind, name=one_line(rel.qualified), info=info))
                table = Untrusted(rel.qualified)
                if "column" in wanted:
                    for c in cols:
                        if _matches(pattern, c["name"]):
                            info = None if detail == "names" else one_line(str(c["type"]))
                            found.append(DbObject(kind="column", name=f"{table}.{Untrusted(c['name'])}", info=info))
                for ix in indexes.get((rel.schema, rel.name), []):
                    if ix["name"] and _matches(pattern, ix["name"]):
                        info = None if detail == "names" else f"({names_in_line(map(str, ix['column_names']))})"
                        found.append(DbObject(kind="index", name=f"{table}.{Untrusted(ix['name'])}", info=info))
        page = _within(found[start : start + limit], DbObject.size)
        end = start + len(page)
        return ObjectList(
            objects=page, next_cursor=encode_cursor({"offset": end}, scope=scope) if end < len(found) else None
        )

    @toolset.tool(title="Describe tables", read_only=True, open_world=False)
    def describe_tables(
        tables: Annotated[list[str], Field(min_length=1, max_length=50)],
        sample_rows: Annotated[int, Field(ge=0, le=20)] = 0,
    ) -> TableDescriptions:
        """Use to see columns, keys, indexes and checks of tables."""
        from mcp_server_db.catalog import describe

        with db.connect() as connection:
            described = describe(db, connection, [from_one_line(t) for t in tables], sample=sample_rows)
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
            page = page_rows(list(result.keys()), _rows(result, QUERY_ROWS + 1), QUERY_BYTES, QUERY_ROWS)
            result.close()
        query_result = QueryResult(
            columns=page.columns,
            rows=page.rows,
            truncated=page.more_rows or page.cut_values or bool(page.more_columns),
            more_rows=page.more_rows,
            more_columns=page.more_columns or None,
        )
        query_result._lines = page.lines  # each row's text line, measured there and rendered as is
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
        return QueryPlan(plan=_within(plan, lambda line: 2 * json_size(line) + 2))

    @toolset.tool(title="Distinct values", read_only=True, open_world=False)
    def distinct_values(
        table: str,
        column: str,
        limit: Annotated[Limit, Field(le=200)] = 20,
    ) -> ValueCounts:
        """Use to see the most common values of a column, with counts."""
        from mcp_server_db.catalog import distinct_values as catalog_distinct_values
        from mcp_server_db.catalog import require, resolve

        # Names as the tools show them (one-line forms, which a model copies back) name the same objects.
        table, column = from_one_line(table), from_one_line(column)
        with db.connect() as connection:
            inspector = db.inspector(connection)
            (rel,) = resolve(db, inspector, [table], db.schema_version(connection))
            require(column, [c["name"] for c in inspector.get_columns(rel.name, schema=rel.schema)], noun="column")
            values, distinct, nulls = catalog_distinct_values(db, connection, rel, column, limit)
        shown = _within(values, lambda pair: json_size(cell(pair[0])) + json_size(pair) + 12)
        return ValueCounts(values=shown, distinct=distinct, nulls=nulls)

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
            returning = result.returns_rows
            page = page_rows(list(result.keys()), result.fetchmany(100), PAGE_BYTES // 2, 100) if returning else None
            affected = result.rowcount if result.rowcount is not None and result.rowcount >= 0 else None
        after_write()  # a CREATE or ALTER is announced now, not at the next poll
        if page is None:
            return Executed(rows_affected=affected)
        more = page.more_rows or bool(page.more_columns)
        return Executed(rows_affected=affected, returned=page.rows, more_returned=more)

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
