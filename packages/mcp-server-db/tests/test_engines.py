"""Read-only holds on real PostgreSQL and MariaDB: each test makes its own database and drops it."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastmcp import Client
from mcp_server_core.testing import free_port
from mcp_server_db.database import Database
from mcp_server_db.server import build_server
from mcp_server_db.settings import DbSettings
from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.exc import OperationalError

PG_ADMIN = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
MY_ADMIN = "mysql+pymysql://root@127.0.0.1:3306/test"

SETUP = [
    "CREATE TABLE items (id INTEGER PRIMARY KEY, name VARCHAR(40) NOT NULL, price INTEGER CHECK (price > 0))",
    "INSERT INTO items VALUES (1, 'a', 10), (2, 'b', 20), (3, 'c', 30)",
]

PG_ATTACKS = [
    "SELECT 1; DROP TABLE items",
    "COMMIT; DELETE FROM items",
    "ROLLBACK; DELETE FROM items",
    "SET TRANSACTION READ WRITE",
    "SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE",
    "SELECT set_config('default_transaction_read_only', 'off', false)",
    "WITH gone AS (DELETE FROM items RETURNING id) SELECT * FROM gone",
    "WITH added AS (INSERT INTO items VALUES (9, 'z', 1) RETURNING id) SELECT * FROM added",
    "SELECT * INTO copy FROM items",
    "EXPLAIN ANALYZE DELETE FROM items",
    "PREPARE p AS DELETE FROM items",
    "EXECUTE p",
    "DO $$ BEGIN DELETE FROM items; END $$",
    "COPY items TO '/tmp/mcpdb-items.csv'",
    "COPY items FROM PROGRAM 'id'",
    "SELECT pg_read_file('/etc/passwd')",
    "SELECT lo_import('/etc/passwd')",
    "SELECT lo_export(1, '/tmp/mcpdb-lo')",
    "SELECT * FROM dblink('dbname=postgres', 'DELETE FROM items') AS t(x int)",
    "SELECT pg_sleep(60)",
    "SELECT pg_advisory_lock(1)",
    "SELECT pg_terminate_backend(1)",
    "NOTIFY evil",
    "SELECT * FROM items FOR UPDATE",
]

MY_ATTACKS = [
    "SELECT 1; DROP TABLE items",
    "COMMIT; DELETE FROM items",
    "SET TRANSACTION READ WRITE",
    "SET SESSION TRANSACTION READ WRITE",
    "SELECT * FROM items INTO OUTFILE '/tmp/mcpdb-out'",
    "SELECT name FROM items INTO DUMPFILE '/tmp/mcpdb-dump'",
    "SELECT LOAD_FILE('/etc/passwd')",
    "LOAD DATA INFILE '/tmp/x' INTO TABLE items",
    "SELECT 1 /*!50000 ; DROP TABLE items */",
    "/*!DELETE FROM items*/",
    "SELECT SLEEP(60)",
    "SELECT GET_LOCK('a', 1)",
    "WITH gone AS (SELECT 1) DELETE FROM items",
    "EXPLAIN DELETE FROM items",
]


def _service(url: str) -> None:
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))
    except OperationalError:
        pytest.fail(f"the database service at {url} is not running (see the machine notes for how to start it)")
    finally:
        engine.dispose()


def _scratch_database(admin_url: str, url_of: Callable[[str], str], drop: str) -> Iterator[str]:
    """A database of its own for one test, with the SETUP tables, dropped afterwards."""
    _service(admin_url)
    name = f"mcpdb_test_{secrets.token_hex(4)}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f"CREATE DATABASE {name}"))
    url = url_of(name)
    owner = create_engine(url)
    with owner.begin() as connection:
        for statement in SETUP:
            connection.execute(text(statement))
    owner.dispose()
    yield url
    with admin.connect() as connection:
        connection.execute(text(drop.format(name=name)))
    admin.dispose()


@pytest.fixture
def pg_url() -> Iterator[str]:
    yield from _scratch_database(
        PG_ADMIN,
        lambda name: f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}",
        "DROP DATABASE {name} WITH (FORCE)",
    )


@pytest.fixture
def my_url() -> Iterator[str]:
    yield from _scratch_database(
        MY_ADMIN, lambda name: f"mysql+pymysql://root@127.0.0.1:3306/{name}", "DROP DATABASE {name}"
    )


def _state(url: str) -> Any:
    engine = create_engine(url)
    with engine.connect() as connection:
        rows = connection.execute(text("SELECT id, name, price FROM items ORDER BY id")).all()
    engine.dispose()
    return [tuple(r) for r in rows]


def _text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


async def _call(url: str, tool: str, arguments: dict[str, Any], **settings: Any) -> Any:
    async with Client(build_server(DbSettings(allow_privileged_role=True, url=url, **settings))) as client:
        return await client.call_tool_mcp(tool, arguments)


@pytest.mark.parametrize("sql", PG_ATTACKS)
async def test_postgres_attacks_are_refused_and_change_nothing(pg_url: str, sql: str) -> None:
    before = _state(pg_url)
    result = await _call(pg_url, "run_query", {"sql": sql})
    assert result.is_error, _text(result)
    assert _state(pg_url) == before


@pytest.mark.parametrize("sql", MY_ATTACKS)
async def test_mariadb_attacks_are_refused_and_change_nothing(my_url: str, sql: str) -> None:
    before = _state(my_url)
    result = await _call(my_url, "run_query", {"sql": sql})
    assert result.is_error, _text(result)
    assert _state(my_url) == before


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT id, sum(price) OVER (ORDER BY id) FROM items",
        "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY price) FROM items",
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5) SELECT n FROM r",
        "EXPLAIN SELECT * FROM items WHERE id = 1",
        "SELECT * FROM items WHERE price > :p",
        "VALUES (1, 'a'), (2, 'b')",
        # information_schema's views call its own built-in helpers (_pg_char_max_length, _pg_expandarray)
        "SELECT column_name, character_maximum_length FROM information_schema.columns WHERE table_name = 'items'",
        "SELECT * FROM information_schema.key_column_usage",
    ],
)
async def test_postgres_reads_that_look_unusual_work(pg_url: str, sql: str) -> None:
    result = await _call(pg_url, "run_query", {"sql": sql, "params": {"p": 5}})
    assert not result.is_error, _text(result)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT id, sum(price) OVER (ORDER BY id) FROM items",
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5) SELECT n FROM r",
        "EXPLAIN SELECT * FROM items WHERE id = 1",
        "VALUES (1, 'a'), (2, 'b')",
    ],
)
async def test_mariadb_reads_that_look_unusual_work(my_url: str, sql: str) -> None:
    result = await _call(my_url, "run_query", {"sql": sql})
    assert not result.is_error, _text(result)


@pytest.mark.parametrize("which", ["pg", "my"])
def test_the_engine_refuses_writes_without_the_parser(which: str, request: pytest.FixtureRequest) -> None:
    url = request.getfixturevalue("pg_url" if which == "pg" else "my_url")
    before = _state(url)
    db = Database(url, allow_privileged_role=True)
    for sql in ["DELETE FROM items", "INSERT INTO items VALUES (8, 'y', 1)", "CREATE TABLE evil (x INTEGER)"]:
        with pytest.raises(Exception), db.connect() as connection:  # noqa: B017, PT011 - any refusal will do
            db.execute(connection, sql)
    db.engine.dispose()
    assert _state(url) == before


async def test_postgres_statement_timeout_stops_a_long_read(pg_url: str) -> None:
    slow = "SELECT count(*) FROM generate_series(1, 100000000) a"
    result = await _call(pg_url, "run_query", {"sql": slow}, statement_timeout_s=0.2)
    assert result.is_error
    assert "timeout" in _text(result)


async def test_describe_tables_on_postgres_and_mariadb(pg_url: str, my_url: str) -> None:
    for url in (pg_url, my_url):
        owner = create_engine(url)
        with owner.begin() as connection:
            connection.execute(
                text(
                    "CREATE TABLE parts (id INTEGER PRIMARY KEY, item_id INTEGER,"
                    " FOREIGN KEY (item_id) REFERENCES items (id))"
                )
            )
        owner.dispose()
        result = await _call(url, "describe_tables", {"tables": ["items", "parts"]})
        text_ = _text(result)
        assert not result.is_error, text_
        assert "\nid INTEGER PRIMARY KEY" in text_
        assert "CHECK" in text_
        assert "\nREFERENCED BY parts(item_id)" in text_
        assert "\nitem_id INTEGER REFERENCES items(id)" in text_


PER_TABLE = ("SELECT count(*)", "SHOW CREATE TABLE")
"""What describe may still run once per table: a count where PostgreSQL never analysed the table, and the
statement SQLAlchemy reflects a MariaDB table from."""


@pytest.mark.parametrize("which", ["pg_url", "my_url"])
async def test_describing_more_tables_adds_no_catalog_queries(which: str, request: pytest.FixtureRequest) -> None:
    """Table by table, describing 6 tables took 59 statements on PostgreSQL against 14 for one, and 15 on
    MariaDB against 5 (besides its SHOW CREATE TABLE each); batched, one per kind of fact for them all, row
    estimates and MariaDB's column checks included."""
    url = request.getfixturevalue(which)
    owner = create_engine(url)
    with owner.begin() as connection:
        for n in range(6):
            connection.execute(
                text(f"CREATE TABLE wide{n} (id INTEGER PRIMARY KEY, item_id INTEGER REFERENCES items (id))")
            )
    owner.dispose()
    statements: list[str] = []

    def heard(_conn: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
        statements.append(statement)

    event.listen(Engine, "before_cursor_execute", heard)
    try:
        counts = []
        async with Client(build_server(DbSettings(allow_privileged_role=True, url=url, schema_poll_s=0))) as client:
            # The first schema read runs on its own thread after initialize; counted beside a call, its
            # statements made the count flaky (CI: [5, 6] on MariaDB). Listing resources waits for it.
            await client.list_resources()
            await client.call_tool_mcp("describe_tables", {"tables": ["items"]})  # once-per-connection lookups
            for tables in (["wide0"], [f"wide{n}" for n in range(6)]):
                statements.clear()
                result = await client.call_tool_mcp("describe_tables", {"tables": tables})
                assert not result.is_error, _text(result)
                assert _text(result).count("REFERENCES items(id)") == len(tables)
                counts.append(len([s for s in statements if not s.lstrip().startswith(PER_TABLE)]))
    finally:
        event.remove(Engine, "before_cursor_execute", heard)
    assert counts[0] == counts[1], counts


async def test_a_password_never_reaches_an_error() -> None:
    url = "postgresql+psycopg://someone:hunter2secret@127.0.0.1:5432/nope"
    result = await _call(url, "run_query", {"sql": "SELECT 1"})
    assert result.is_error
    assert "hunter2secret" not in _text(result)


@pytest.mark.parametrize("scheme", ["postgresql+psycopg", "mysql+pymysql"])
async def test_a_database_nobody_listens_for_is_unreachable_not_a_bad_statement(scheme: str) -> None:
    url = f"{scheme}://someone:hunter2secret@127.0.0.1:{free_port()}/nope"
    result = await _call(url, "run_query", {"sql": "SELECT 1"})
    assert result.is_error
    text_ = _text(result)
    assert "is unreachable" in text_, text_
    assert "refused the statement" not in text_
    assert "try again" in text_
    assert "hunter2secret" not in text_


@pytest.mark.parametrize("which", ["pg_url", "my_url"])
async def test_write_mode_commits_one_statement_and_a_failed_one_changes_nothing(
    which: str, request: pytest.FixtureRequest
) -> None:
    url = request.getfixturevalue(which)
    async with Client(
        build_server(DbSettings(allow_privileged_role=True, url=url, allow_write=True, schema_poll_s=0))
    ) as client:
        done = await client.call_tool_mcp("execute_statement", {"sql": "UPDATE items SET price = price + 1"})
        after_update = _state(url)
        failed = await client.call_tool_mcp(
            "execute_statement", {"sql": "UPDATE items SET price = -1 WHERE id = :id", "params": {"id": 1}}
        )
        read = await client.call_tool_mcp("run_query", {"sql": "SELECT count(*) AS n FROM items"})
        refused_read_write = await client.call_tool_mcp("run_query", {"sql": "DELETE FROM items"})
    assert not done.is_error, _text(done)
    assert failed.is_error  # the CHECK (price >= 0) refuses it
    assert _state(url) == after_update
    assert not read.is_error, _text(read)  # the read pool stays read-only beside the writer
    assert refused_read_write.is_error


@pytest.mark.parametrize("which", ["pg_url", "my_url"])
def test_the_schema_fingerprint_changes_with_a_column_and_not_with_data(
    which: str, request: pytest.FixtureRequest
) -> None:
    from mcp_server_db.catalog import fingerprint
    from mcp_server_db.database import Database

    url = request.getfixturevalue(which)
    db = Database(url, allow_privileged_role=True)
    owner = create_engine(url)

    def snapshot() -> dict[str, str]:
        with db.connect() as connection:
            return fingerprint(db, connection)

    first = snapshot()
    with owner.begin() as connection:
        connection.execute(text("INSERT INTO items (id, name, price) VALUES (99, 'new', 1)"))
    assert snapshot() == first
    with owner.begin() as connection:
        connection.execute(text("ALTER TABLE items ADD COLUMN note VARCHAR(20)"))
    changed = snapshot()
    owner.dispose()
    db.close()
    assert "items" in first
    assert changed["items"] != first["items"]
    assert {k: v for k, v in changed.items() if k != "items"} == {k: v for k, v in first.items() if k != "items"}


async def test_postgres_objects_beyond_the_default_schema_are_found_and_described(pg_url: str) -> None:
    owner = create_engine(pg_url)
    with owner.begin() as connection:
        connection.execute(text("CREATE SCHEMA sales"))
        connection.execute(
            text("CREATE TABLE sales.orders (id INTEGER PRIMARY KEY, item_id INTEGER REFERENCES items (id), kind TEXT)")
        )
        connection.execute(
            text("CREATE TABLE sales.refunds (id INTEGER PRIMARY KEY, order_id INTEGER REFERENCES sales.orders (id))")
        )
        connection.execute(text("INSERT INTO sales.orders VALUES (1, 1, 'web'), (2, 2, 'web'), (3, 1, 'shop')"))
    owner.dispose()
    async with Client(
        build_server(DbSettings(allow_privileged_role=True, url=pg_url, toolsets="all", schema_poll_s=0))
    ) as client:
        found = await client.call_tool("find_objects", {"kinds": ["schema", "table"]})
        described = await client.call_tool("describe_tables", {"tables": ["sales.orders", "items"]})
        values = await client.call_tool("distinct_values", {"table": "sales.orders", "column": "kind"})
        uris = {str(r.uri) for r in await client.list_resources()}
        missing = await client.call_tool_mcp("describe_tables", {"tables": ["sales.order"]})
    names = {(o["kind"], o["name"]) for o in (found.structured_content or {})["objects"]}
    assert {("schema", "public"), ("schema", "sales"), ("table", "items"), ("table", "sales.orders")} <= names
    text_ = _text(described)
    assert "TABLE sales.orders" in text_
    assert "REFERENCES items(id)" in text_
    assert "\nREFERENCED BY sales.refunds(order_id)" in text_
    assert "\nREFERENCED BY sales.orders(item_id)" in text_
    assert (values.structured_content or {})["values"][0] == ["web", 2]
    assert "db://tables/sales.orders" in uris
    assert "Did you mean 'sales.orders'" in _text(missing)
