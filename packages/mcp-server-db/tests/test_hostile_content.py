"""Hostile content in a database reaches the model fenced or in its one-line form, within every tool's budget,
while the server keeps answering: the testing kit's three checks over every tool (all toolsets, writes on).

Table, view, index and column names, comments, defaults, checks and cells hold the kit's fixtures (SQLite takes
any of them quoted); one row of 1,663 columns of 999 characters is read on SQLite, PostgreSQL and MariaDB."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from mcp_server_core import one_line
from mcp_server_core.testing.hostile import (
    FORGED,
    HOSTILE_BODIES,
    HOSTILE_NAMES,
    assert_every_tool_holds,
    assert_failure_holds,
    assert_fenced,
    assert_within_budget,
)
from mcp_server_db.server import build_server
from mcp_server_db.settings import DbSettings

FIXTURES = [*HOSTILE_NAMES.values(), *HOSTILE_BODIES.values()]
NAMES = list(HOSTILE_NAMES.values())
TABLE = HOSTILE_NAMES["newline"]
WIDE_COLUMNS, WIDE_CHARS = 1_663, 999
PG = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
MY = "mysql+pymysql://root@127.0.0.1:3306/test"
WIDE_SQL = {
    "sqlite": "WITH v(s) AS (SELECT printf('%999s', 'x')) SELECT {columns} FROM v",
    "postgresql": "WITH v(s) AS (SELECT repeat('x', 999)) SELECT {columns} FROM v",
    "mysql": "WITH v(s) AS (SELECT REPEAT('x', 999)) SELECT {columns} FROM v",
}


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _wide_sql(dialect: str) -> str:
    return WIDE_SQL[dialect].format(columns=", ".join(f"s AS c{i}" for i in range(WIDE_COLUMNS)))


@pytest.fixture
def hostile_db(tmp_path: Path) -> str:
    path = tmp_path / "hostile.db"
    columns = [f"{_quoted(name)} TEXT DEFAULT {_literal(FORGED + chr(10) + name)}" for name in NAMES]
    check = f"CHECK (length(id) < 100 OR {_literal(chr(10) + FORGED)} = 'y')"
    statements = [
        f"CREATE TABLE {_quoted(TABLE)} (id INTEGER PRIMARY KEY, {', '.join(columns)}, {check})",
        f"CREATE INDEX {_quoted(HOSTILE_NAMES['fence'])} ON {_quoted(TABLE)} ({_quoted(NAMES[1])})",
        f"CREATE VIEW {_quoted(HOSTILE_NAMES['bidi'])} AS SELECT * FROM {_quoted(TABLE)}",
        f"CREATE TABLE {_quoted(HOSTILE_NAMES['standing'])} (x TEXT REFERENCES {_quoted(TABLE)}(id))",
        "CREATE TABLE schema_comments (table_name TEXT, column_name TEXT, comment TEXT)",
        "CREATE TABLE wide ({})".format(", ".join(f"c{i} TEXT" for i in range(WIDE_COLUMNS))),
    ]
    connection = sqlite3.connect(path)
    for statement in statements:
        connection.execute(statement)
    cells = [*HOSTILE_BODIES.values(), *NAMES]
    for row in range(len(cells)):
        values = [cells[(row + offset) % len(cells)] for offset in range(len(NAMES))]
        connection.execute(f"INSERT INTO {_quoted(TABLE)} VALUES (?, {', '.join('?' * len(NAMES))})", [row, *values])
    comments = [(TABLE, None, f"x\x1b[2J\u202e\n{FORGED}"), *((TABLE, name, f"{name}\n{FORGED}") for name in NAMES)]
    connection.executemany("INSERT INTO schema_comments VALUES (?, ?, ?)", comments)
    connection.execute(f"INSERT INTO wide VALUES ({', '.join('?' * WIDE_COLUMNS)})", ["x" * WIDE_CHARS] * WIDE_COLUMNS)
    connection.commit()
    connection.close()
    return f"sqlite:///{path}"


def calls() -> dict[str, list[dict[str, Any]]]:
    """Each tool's calls over the hostile database: the keys must be every tool the server offers."""
    everything = ["schema", "table", "view", "column", "index"]
    table = _quoted(TABLE)
    return {
        "find_objects": [
            {},
            {"kinds": everything, "detail": "full", "limit": 500},
            {"kinds": everything, "detail": "summary", "limit": 500},
            {"pattern": "*IMPORTANT*", "kinds": ["column", "table", "index"]},
        ],
        "describe_tables": [
            {"tables": [TABLE, HOSTILE_NAMES["bidi"], HOSTILE_NAMES["standing"]], "sample_rows": 20},
            {"tables": [one_line(TABLE), one_line(HOSTILE_NAMES["bidi"])]},  # as find_objects shows them
            {"tables": ["wide"], "sample_rows": 1},
        ],
        "run_query": [
            {"sql": f"SELECT * FROM {table}"},
            {"sql": f"SELECT * FROM {_quoted(HOSTILE_NAMES['bidi'])} WHERE id < 3"},
            {"sql": "SELECT * FROM wide"},
            {"sql": _wide_sql("sqlite")},
            {"sql": f"EXPLAIN QUERY PLAN SELECT * FROM {table} WHERE {_quoted(NAMES[1])} = 'x'"},
        ],
        "explain_query": [{"sql": f"SELECT * FROM {table} WHERE {_quoted(NAMES[1])} = 'x'"}],
        "distinct_values": [{"table": TABLE, "column": name, "limit": 200} for name in NAMES]
        + [{"table": one_line(TABLE), "column": one_line(name)} for name in NAMES],
        "execute_statement": [
            {"sql": f"UPDATE {table} SET id = id RETURNING *"},
            {"sql": "UPDATE wide SET c0 = c0 RETURNING *"},
        ],
    }


async def test_every_tool_keeps_hostile_names_and_cells_in_line_within_budget(hostile_db: str) -> None:
    settings = DbSettings(url=hostile_db, toolsets="all", allow_write=True, schema_poll_s=0)
    server = build_server(settings)
    budgets = {definition.name: definition.budget for definition in server.toolsets.definitions()}
    async with Client(server, mode="legacy") as client:
        # Cells are data: structured content carries them as the database holds them (JSON escapes what must
        # be), so the kit's structure check is made here on everything but the values.
        await assert_every_tool_holds(client, calls(), budgets, FIXTURES, check_structure=False)
        for name, argument_sets in calls().items():
            for arguments in argument_sets:
                structured = (await client.call_tool_mcp(name, arguments)).structured_content or {}
                assert_fenced(json.dumps(_without_values(structured), ensure_ascii=False))
        # Resources name tables too: their names, titles and the overview show them in one line each.
        listed = [f"{r.name}\t{r.title}\t{r.description}" for r in await client.list_resources()]
        overview = await client.read_resource("db://schema")
        assert_fenced("\n".join([*listed, overview[0].text]), FIXTURES)  # type: ignore[union-attr]


def _without_values(structured: dict[str, Any]) -> dict[str, Any]:
    kept = {key: value for key, value in structured.items() if key not in ("rows", "values", "returned")}
    if "tables" in kept:
        kept["tables"] = [{k: v for k, v in t.items() if k != "sample"} for t in kept["tables"]]
    return kept


def _check_wide(result: Any) -> None:
    assert not result.is_error, result.content
    assert_within_budget(result, 13_000)
    structured = result.structured_content
    assert structured["truncated"] is True
    [row] = structured["rows"]
    shown = len(structured["columns"])
    assert 1 <= shown < WIDE_COLUMNS
    assert len(row) == shown, "the structure holds the columns it names"
    header, line = result.content[0].text.split("\n")[:2]
    assert header.split("\t") == structured["columns"], "the text shows the columns the structure holds"
    assert len(line.split("\t")) == shown
    assert f"{shown:,} of {WIDE_COLUMNS:,} columns" in result.content[0].text


async def test_one_wide_row_is_cut_to_the_columns_that_fit_on_sqlite(hostile_db: str) -> None:
    async with Client(build_server(DbSettings(url=hostile_db, schema_poll_s=0))) as client:
        _check_wide(await client.call_tool_mcp("run_query", {"sql": _wide_sql("sqlite")}))
        _check_wide(await client.call_tool_mcp("run_query", {"sql": "SELECT * FROM wide"}))


@pytest.mark.parametrize(("dialect", "url"), [("postgresql", PG), ("mysql", MY)])
async def test_one_wide_row_is_cut_to_the_columns_that_fit_on_postgres_and_mariadb(dialect: str, url: str) -> None:
    settings = DbSettings(url=url, allow_privileged_role=True, schema_poll_s=0)
    async with Client(build_server(settings)) as client:
        _check_wide(await client.call_tool_mcp("run_query", {"sql": _wide_sql(dialect)}))


async def test_a_column_named_to_forge_a_line_shows_in_one_line_in_the_header(hostile_db: str) -> None:
    alias = _quoted(f"x\n{FORGED}")
    async with Client(build_server(DbSettings(url=hostile_db, schema_poll_s=0))) as client:
        result = await client.call_tool_mcp("run_query", {"sql": f"SELECT 1 AS {alias}, 'a\u202eb' AS y"})
    text = result.content[0].text
    assert text.split("\n")[0] == f"x\\n{FORGED}\ty"
    assert text.split("\n")[1] == "1\ta\\u202eb"
    assert result.structured_content["columns"] == [f"x\\n{FORGED}", "y"]
    assert result.structured_content["rows"] == [[1, "a\u202eb"]], "a value is data: the structure keeps it"


async def test_a_name_that_reads_as_ddl_is_quoted_in_describe(tmp_path: Path) -> None:
    path = tmp_path / "forged.db"
    connection = sqlite3.connect(path)
    connection.execute('CREATE TABLE "t PRIMARY KEY" ("x TEXT PRIMARY KEY" TEXT, "say ""hi""" INTEGER, plain TEXT)')
    connection.close()
    async with Client(build_server(DbSettings(url=f"sqlite:///{path}", schema_poll_s=0))) as client:
        result = await client.call_tool_mcp("describe_tables", {"tables": ["t PRIMARY KEY"]})
    lines = result.content[0].text.split("\n")
    assert lines[:4] == [
        'TABLE "t PRIMARY KEY" (~0 rows)',
        '"x TEXT PRIMARY KEY" TEXT',
        '"say ""hi""" INTEGER',
        "plain TEXT",
    ]


HOSTILE_FAILURE = f"x\x1b[2J\u202e{'y' * 500}"


@pytest.fixture
def failing_db(tmp_path: Path) -> str:
    """A trigger whose message and a CHECK constraint whose name are someone else's words: the database quotes
    them in the error a write gets."""
    path = tmp_path / "failing.db"
    connection = sqlite3.connect(path)
    connection.execute(f"CREATE TABLE t (x INTEGER CONSTRAINT {_quoted(HOSTILE_FAILURE)} CHECK (x > 0))")
    connection.execute("CREATE TABLE u (x INTEGER)")
    connection.execute(
        f"CREATE TRIGGER no_u BEFORE INSERT ON u BEGIN SELECT RAISE(ABORT, {_literal(HOSTILE_FAILURE)}); END"
    )
    connection.commit()
    connection.close()
    return f"sqlite:///{path}"


async def test_a_database_error_quoting_hostile_words_is_one_bounded_line(failing_db: str) -> None:
    server = build_server(DbSettings(url=failing_db, allow_write=True, schema_poll_s=0))
    async with Client(server, mode="legacy") as client:
        for sql in ("INSERT INTO t VALUES (-1)", "INSERT INTO u VALUES (1)"):
            result = await client.call_tool_mcp("execute_statement", {"sql": sql})
            text = assert_failure_holds(result, FIXTURES)
            assert "\\x1b[2J\\u202e" in text, text  # shown escaped, not dropped: the model sees what was there


async def test_a_postgresql_error_quoting_a_hostile_constraint_is_one_bounded_line() -> None:
    import sqlalchemy

    engine = sqlalchemy.create_engine(PG)
    name = "x\x1b[2J\u202e" + FORGED[:40]
    with engine.begin() as connection:
        connection.exec_driver_sql("DROP TABLE IF EXISTS hostile_failure")
        connection.exec_driver_sql(f"CREATE TABLE hostile_failure (x integer CONSTRAINT {_quoted(name)} CHECK (x > 0))")
    try:
        server = build_server(DbSettings(url=PG, allow_write=True, schema_poll_s=0))
        async with Client(server, mode="legacy") as client:
            sql = "INSERT INTO hostile_failure VALUES (-1)"
            result = await client.call_tool_mcp("execute_statement", {"sql": sql})
            text = assert_failure_holds(result, FIXTURES)
            assert "\\x1b[2J\\u202e" in text, text
    finally:
        with engine.begin() as connection:
            connection.exec_driver_sql("DROP TABLE IF EXISTS hostile_failure")
        engine.dispose()


async def test_resources_list_is_bounded_however_many_tables(tmp_path: Path) -> None:
    """Each table was listed as a resource, in one page: 3,000 tables of long names made resources/list
    megabytes (100,000 made it a hundred). The first TABLE_RESOURCES are listed; every table stays readable
    through the db://tables/{name} template and named in the overview and find_objects."""
    from mcp_server_db.resources import TABLE_RESOURCES

    path = tmp_path / "many.db"
    connection = sqlite3.connect(path)
    long = HOSTILE_NAMES["bidi"] + "y" * 200
    for n in range(3_000):
        connection.execute(f"CREATE TABLE {_quoted(f'{long}{n:04d}')} (id INTEGER)")
    connection.commit()
    connection.close()
    server = build_server(DbSettings(url=f"sqlite:///{path}", schema_poll_s=0))
    async with Client(server, mode="legacy") as client:
        listed = await client.list_resources()
        tables = [r for r in listed if str(r.uri).startswith("db://tables/")]
        assert len(tables) == TABLE_RESOURCES
        size = len(json.dumps([r.model_dump(mode="json") for r in listed]).encode())
        assert size <= TABLE_RESOURCES * 1_500, f"resources/list is {size:,} bytes"
        last = sorted(f"{long}{n:04d}" for n in range(3_000))[-1]
        from mcp_server_db.resources import table_uri

        [content] = await client.read_resource(table_uri(last))  # past the listed ones, still readable
        assert "id" in content.text  # type: ignore[union-attr]
