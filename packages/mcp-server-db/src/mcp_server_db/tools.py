"""The tools: find and describe schema objects, run and explain read-only queries."""

from __future__ import annotations

import fnmatch
import json
from typing import Annotated, Any, Literal

from mcp_server_core import (
    Cursor,
    InvalidArgument,
    Limit,
    NotFound,
    Rendered,
    Toolset,
    decode_cursor,
    did_you_mean,
    encode_cursor,
)
from pydantic import BaseModel, Field
from sqlalchemy import text

from mcp_server_db.database import Database
from mcp_server_db.guard import check_read_only

Kind = Literal["table", "view", "column", "index"]
QUERY_BYTES = 12_000
CELL_CHARS = 200


# --- results ---------------------------------------------------------------------------------------------


class DbObject(BaseModel):
    kind: str
    name: str  # table.column for columns and indexes
    info: str | None = None


class ObjectList(Rendered):
    objects: list[DbObject]
    next_cursor: str | None = None

    def render(self) -> str:
        lines = [f"{o.kind} {o.name}" + (f" {o.info}" if o.info else "") for o in self.objects]
        if not lines:
            lines.append("No object matches.")
        if self.next_cursor:
            lines.append(f"next_cursor={self.next_cursor}")
        return "\n".join(lines)


class ColumnInfo(BaseModel):
    name: str
    type: str
    nullable: bool
    default: str | None = None
    comment: str | None = None


class ForeignKey(BaseModel):
    columns: list[str]
    ref_table: str
    ref_columns: list[str]


class IndexInfo(BaseModel):
    name: str
    columns: list[str]
    unique: bool


class TableInfo(BaseModel):
    name: str
    kind: str
    comment: str | None = None
    columns: list[ColumnInfo]
    primary_key: list[str]
    foreign_keys: list[ForeignKey]
    referenced_by: list[ForeignKey]
    indexes: list[IndexInfo]
    unique: list[list[str]]
    checks: list[str]
    row_estimate: int | None = None

    def render(self) -> str:
        head = f"{self.kind.upper()} {self.name}" + (f" -- {self.comment}" if self.comment else "")
        head += f" (~{self.row_estimate} rows)" if self.row_estimate is not None else ""
        lines = [head]
        for c in self.columns:
            line = f"  {c.name} {c.type}{'' if c.nullable else ' NOT NULL'}"
            line += f" DEFAULT {c.default}" if c.default is not None else ""
            line += f" -- {c.comment}" if c.comment else ""
            lines.append(line)
        if self.primary_key:
            lines.append(f"  PRIMARY KEY ({', '.join(self.primary_key)})")
        lines += [
            f"  FK ({', '.join(f.columns)}) -> {f.ref_table}({', '.join(f.ref_columns)})" for f in self.foreign_keys
        ]
        lines += [f"  <- {f.ref_table}({', '.join(f.columns)})" for f in self.referenced_by]
        lines += [f"  UNIQUE ({', '.join(u)})" for u in self.unique]
        lines += [f"  CHECK ({c})" for c in self.checks]
        lines += [f"  {'UNIQUE ' if i.unique else ''}INDEX {i.name} ({', '.join(i.columns)})" for i in self.indexes]
        return "\n".join(lines)


class TableDescriptions(Rendered):
    # Plain objects in the schema: the nested models would cost tools/list 1.5 kB; the keys are TableInfo's.
    tables: list[dict[str, Any]]

    def render(self) -> str:
        return "\n\n".join(TableInfo.model_validate(t).render() for t in self.tables)


class QueryResult(Rendered):
    columns: list[str]
    rows: list[list[Any]]
    truncated: bool
    next_cursor: str | None = None

    def render(self) -> str:
        lines = ["\t".join(self.columns)]
        lines += ["\t".join(_cell(v) for v in row) for row in self.rows]
        noun = "row" if len(self.rows) == 1 else "rows"
        tail = f"({len(self.rows)} {noun}{', truncated' if self.truncated else ''})"
        lines.append(tail + (f" next_cursor={self.next_cursor}" if self.next_cursor else ""))
        return "\n".join(lines)


class QueryPlan(Rendered):
    plan: list[str]

    def render(self) -> str:
        return "\n".join(self.plan)


# --- helpers ---------------------------------------------------------------------------------------------


def _cell(value: Any) -> str:
    shown = "NULL" if value is None else str(value)
    shown = shown.replace("\t", " ").replace("\n", " ")
    return shown if len(shown) <= CELL_CHARS else shown[:CELL_CHARS] + "…"


def _json_value(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return f"<{len(bytes(value))} bytes>"
    return str(value)


def _matches(pattern: str, name: str) -> bool:
    glob = pattern.replace("%", "*").replace("_", "?") if "%" in pattern else pattern
    if not any(ch in glob for ch in "*?["):
        return glob.lower() in name.lower()
    return fnmatch.fnmatch(name.lower(), glob.lower())


def _sqlite_comments(db: Database, connection: Any) -> dict[tuple[str, str | None], str]:
    if db.dialect != "sqlite":
        return {}
    try:
        rows = connection.execute(text("SELECT table_name, column_name, comment FROM schema_comments")).all()
    except Exception:
        return {}
    return {(r[0], r[1]): r[2] for r in rows}


def _row_estimate(db: Database, connection: Any, table: str) -> int | None:
    try:
        if db.dialect == "postgresql":
            value = connection.execute(
                text("SELECT reltuples::bigint FROM pg_class WHERE oid = to_regclass(:t)"), {"t": table}
            ).scalar()
            if value is not None and value < 0:
                value = connection.execute(text(f'SELECT count(*) FROM "{table}"')).scalar()  # noqa: S608
        elif db.dialect == "sqlite":
            value = connection.execute(text(f'SELECT count(*) FROM "{table}"')).scalar()  # noqa: S608
        else:
            value = connection.execute(
                text(
                    "SELECT table_rows FROM information_schema.tables"
                    " WHERE table_schema = DATABASE() AND table_name = :t"
                ),
                {"t": table},
            ).scalar()
    except Exception:
        return None
    return None if value is None else int(value)


def _checks(db: Database, connection: Any, inspector: Any, table: str) -> list[str]:
    checks = [str(ck["sqltext"]) for ck in inspector.get_check_constraints(table)]
    if not checks and db.dialect in ("mysql", "mariadb"):
        # SQLAlchemy's MySQL dialect misses MariaDB's column-level CHECKs; information_schema has them all.
        rows = connection.execute(
            text(
                "SELECT check_clause FROM information_schema.check_constraints"
                " WHERE constraint_schema = DATABASE() AND table_name = :t"
            ),
            {"t": table},
        ).all()
        checks = [str(r[0]) for r in rows]
    return checks


# --- the toolsets ----------------------------------------------------------------------------------------


def schema_toolset(db: Database) -> Toolset:
    toolset = Toolset("schema", "Find and describe tables, views, columns and indexes")

    @toolset.tool(title="Find objects", read_only=True, open_world=False)
    def find_objects(
        pattern: Annotated[str, Field(description="substring or glob")] = "*",
        kinds: list[Kind] | None = None,
        detail: Literal["names", "summary", "full"] = "names",
        limit: Annotated[Limit, Field(le=500)] = 100,
        cursor: Cursor = None,
    ) -> ObjectList:
        """Use to find tables, views, columns or indexes by name."""
        wanted = set(kinds or ["table", "view"])
        scope = json.dumps([pattern, sorted(wanted), detail])
        start = int(decode_cursor(cursor, scope=scope)["offset"]) if cursor else 0
        found: list[DbObject] = []
        with db.connect() as connection:
            inspector = db.inspector(connection)
            tables = sorted(inspector.get_table_names())
            views = sorted(inspector.get_view_names())
            for kind, names in (("table", tables), ("view", views)):
                for name in names:
                    columns = inspector.get_columns(name) if detail != "names" or "column" in wanted else []
                    if kind in wanted and _matches(pattern, name):
                        info = None
                        if detail == "summary":
                            info = f"({len(columns)} columns)"
                        elif detail == "full":
                            info = "(" + ", ".join(f"{c['name']} {c['type']}" for c in columns) + ")"
                        found.append(DbObject(kind=kind, name=name, info=info))
                    if "column" in wanted:
                        for c in columns:
                            if _matches(pattern, c["name"]):
                                info = None if detail == "names" else str(c["type"])
                                found.append(DbObject(kind="column", name=f"{name}.{c['name']}", info=info))
                    if "index" in wanted and kind == "table":
                        for ix in inspector.get_indexes(name):
                            if ix["name"] and _matches(pattern, ix["name"]):
                                info = None if detail == "names" else f"({', '.join(map(str, ix['column_names']))})"
                                found.append(DbObject(kind="index", name=f"{name}.{ix['name']}", info=info))
        page = found[start : start + limit]
        more = start + limit < len(found)
        return ObjectList(
            objects=page, next_cursor=encode_cursor({"offset": start + limit}, scope=scope) if more else None
        )

    @toolset.tool(title="Describe tables", read_only=True, open_world=False)
    def describe_tables(
        tables: Annotated[list[str], Field(min_length=1, max_length=50)],
    ) -> TableDescriptions:
        """Use to see columns, keys, indexes and checks of tables."""
        described: list[TableInfo] = []
        with db.connect() as connection:
            inspector = db.inspector(connection)
            all_tables = inspector.get_table_names()
            views = inspector.get_view_names()
            known = set(all_tables) | set(views)
            for name in tables:
                if name not in known:
                    raise NotFound(f"Table {name!r} not found.", hint=did_you_mean(name, known, noun="table"))
            comments = _sqlite_comments(db, connection)
            incoming: dict[str, list[ForeignKey]] = {}
            for other in all_tables:
                for fk in inspector.get_foreign_keys(other):
                    incoming.setdefault(fk["referred_table"], []).append(
                        ForeignKey(
                            columns=fk["constrained_columns"], ref_table=other, ref_columns=fk["referred_columns"]
                        )
                    )
            for name in tables:
                is_view = name in views and name not in all_tables
                columns = [
                    ColumnInfo(
                        name=c["name"],
                        type=str(c["type"]),
                        nullable=bool(c.get("nullable", True)),
                        default=None if c.get("default") is None else str(c["default"]),
                        comment=c.get("comment") or comments.get((name, c["name"])),
                    )
                    for c in inspector.get_columns(name)
                ]
                if is_view:
                    described.append(
                        TableInfo(
                            name=name,
                            kind="view",
                            columns=columns,
                            primary_key=[],
                            foreign_keys=[],
                            referenced_by=[],
                            indexes=[],
                            unique=[],
                            checks=[],
                        )
                    )
                    continue
                try:
                    comment = inspector.get_table_comment(name).get("text")
                except NotImplementedError:
                    comment = None
                described.append(
                    TableInfo(
                        name=name,
                        kind="table",
                        comment=comment or comments.get((name, None)),
                        columns=columns,
                        primary_key=list(inspector.get_pk_constraint(name).get("constrained_columns") or []),
                        foreign_keys=[
                            ForeignKey(
                                columns=fk["constrained_columns"],
                                ref_table=fk["referred_table"],
                                ref_columns=fk["referred_columns"],
                            )
                            for fk in inspector.get_foreign_keys(name)
                        ],
                        referenced_by=incoming.get(name, []),
                        indexes=[
                            IndexInfo(
                                name=ix["name"] or "", columns=[str(c) for c in ix["column_names"]], unique=ix["unique"]
                            )
                            for ix in inspector.get_indexes(name)
                        ],
                        unique=[list(u["column_names"]) for u in inspector.get_unique_constraints(name)],
                        checks=_checks(db, connection, inspector, name),
                        row_estimate=_row_estimate(db, connection, name),
                    )
                )
        return TableDescriptions(tables=[t.model_dump(mode="json", exclude_none=True) for t in described])

    return toolset


def query_toolset(db: Database) -> Toolset:
    toolset = Toolset("query", "Run read-only SQL")

    @toolset.tool(title="Run query", read_only=True, open_world=False, budget=QUERY_BYTES + 1_000)
    def run_query(
        sql: str,
        params: dict[str, Any] | None = None,
        limit: Annotated[Limit, Field(le=1000)] = 100,
        cursor: Cursor = None,
    ) -> QueryResult:
        """Use to run one SELECT; params fill its :name placeholders."""
        statement, explain = check_read_only(sql, db.dialect)
        if explain:
            statement = _explain_sql(db, statement)
        scope = json.dumps([sql, params], sort_keys=True, default=str)
        offset = int(decode_cursor(cursor, scope=scope)["offset"]) if cursor else 0
        with db.connect() as connection:
            try:
                result = db.execute(connection, statement, params)
            except KeyError as exc:
                raise InvalidArgument(f"No value for placeholder {exc}.", hint="Add it to params.") from None
            columns = list(map(str, result.keys()))
            if offset:
                result.fetchmany(offset)
            fetched = result.fetchmany(limit + 1)
            result.close()
        rows = [[_json_value(v) for v in row] for row in fetched[:limit]]
        more = len(fetched) > limit
        used = 0
        for index, row in enumerate(rows):
            used += len("\t".join(_cell(v) for v in row).encode()) + 1
            if used > QUERY_BYTES and index > 0:
                rows, more = rows[:index], True
                break
        next_cursor = encode_cursor({"offset": offset + len(rows)}, scope=scope) if more else None
        return QueryResult(columns=columns, rows=rows, truncated=more, next_cursor=next_cursor)

    return toolset


def plan_toolset(db: Database) -> Toolset:
    # Off by default (tools/list budget): run_query takes EXPLAIN SELECT too. --toolsets all turns it on.
    toolset = Toolset("plan", "Explain queries", default=False)

    @toolset.tool(title="Explain query", read_only=True, open_world=False)
    def explain_query(
        sql: str,
        params: dict[str, Any] | None = None,
    ) -> QueryPlan:
        """Use to see the plan of a SELECT without running it."""
        statement, _ = check_read_only(sql, db.dialect)
        with db.connect() as connection:
            result = db.execute(connection, _explain_sql(db, statement), params)
            plan = [" | ".join(_cell(v) for v in row) for row in result.fetchmany(500)]
        return QueryPlan(plan=plan)

    return toolset


def _explain_sql(db: Database, statement: str) -> str:
    return f"EXPLAIN QUERY PLAN {statement}" if db.dialect == "sqlite" else f"EXPLAIN {statement}"
