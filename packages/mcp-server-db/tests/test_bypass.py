"""The read-only promise under attack, on real engines: every case refused, and nothing changed, seen from outside.

PostgreSQL and MariaDB run twice, as a superuser or root (with --allow-privileged-role, so only the guard stands)
and as a least-privilege role (the configuration docs/db-least-privilege.md asks for); the PostgreSQL test
database has the dblink and pgcrypto extensions, so the dangerous functions really exist. SQLite runs on a file.
After each case a second connection checks what an attack would have changed: the rows, advisory and named locks,
replication slots, statistics reset times, another session still alive, files on the host.
"""

from __future__ import annotations

import os
import re
import secrets
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from mcp_server_db.database import Database, PrivilegedRole
from mcp_server_db.functions import ALLOWED_NAMES, PG_VOLATILE_READS
from mcp_server_db.server import build_server
from mcp_server_db.settings import DbSettings
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError

PG_ADMIN = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
MY_ADMIN = "mysql+pymysql://root@127.0.0.1:3306/test"
TAG = secrets.token_hex(4)
OUT = Path(tempfile.gettempdir()) / f"mcpdb-bypass-{TAG}"
"""Where file-writing attacks aim; it must never exist."""

PG_CASES = [
    # quoted, escaped, differently cased and schema-qualified names
    'SELECT "pg_advisory_lock"(4242)',
    'SELECT "PG_ADVISORY_LOCK"(4242)',
    "SELECT pg_catalog.pg_advisory_lock(4242)",
    'SELECT "pg_catalog"."pg_advisory_lock"(4242)',
    'SELECT U&"\\0070g_advisory_lock"(4242)',
    "SELECT * FROM pg_advisory_lock(4242)",
    "SELECT (SELECT pg_try_advisory_lock(4242))",
    "WITH x AS (SELECT pg_advisory_lock(4242) AS l) SELECT * FROM x",
    "SELECT id FROM items ORDER BY pg_advisory_lock(id)",
    "SELECT i.id FROM items i, LATERAL (SELECT pg_advisory_lock(i.id)) l",
    "SELECT id FROM items WHERE pg_try_advisory_lock(id)",
    "SELECT pg_advisory_xact_lock(4242)",
    "SELECT \"UPPER\"('x')",
    "SELECT \"Lower\"('x')",
    "SELECT \"COUNT\"('x')",
    "SELECT public.\"UPPER\"('x')",
    # names sqlglot knows a function by, which PostgreSQL has no built-in of: the database's own function runs
    "SELECT median('x')",
    "SELECT first('x')",
    "SELECT log2('x')",
    "SELECT sha1('x')",
    # a name that is a built-in, overloaded in public: upper(integer) matches better than pg_catalog.upper(text)
    "SELECT upper(1)",
    # a type sqlglot knows that PostgreSQL has no built-in of, or a quoted spelling of one it has: the database's
    # own domain, whose CHECK runs a function, is what the cast or literal makes
    "SELECT 'x'::datetime",
    "SELECT CAST('x' AS tinyint)",
    "SELECT datetime 'x'",
    "SELECT 'x'::\"Text\"",
    'SELECT * FROM json_to_record(\'{"a": "x"}\') AS t(a datetime)',
    # an operator is a function: the database's own + for text, and one named by its schema
    "SELECT name + name FROM items",
    "SELECT name OPERATOR(public.+) name FROM items",
    # a relation whose reading runs the database's own code
    "SELECT * FROM lowered",
    "SELECT id FROM public.lowered_again",
    "SELECT * FROM items WHERE id IN (SELECT id FROM guarded)",
    # a foreign table: its wrapper reads files, runs programs or reaches other servers
    "SELECT * FROM host_program",
    "SELECT * FROM host_view",
    # ... or one reached through a parent: a partition or an inheritance child, read through the parent or a view
    "SELECT count(*) FROM part_parent",
    "SELECT * FROM inh_parent",
    "SELECT * FROM parent_view",
    # a view calling a built-in or an extension's function with an effect: named nowhere in the statement
    "SELECT * FROM v_kill",
    "TABLE v_kill",
    "SELECT v FROM v_kill v",
    "SELECT 1 WHERE EXISTS (SELECT 1 FROM v_kill)",
    "SELECT * FROM v_dblink",
    "SELECT * FROM v_file",
    # a cast a type's owner defined, which runs where a value of that type is converted: explicitly, by the row
    # type of a table, or implicitly to fit a built-in's argument
    "SELECT a::text FROM people",
    "SELECT CAST(p AS text) FROM people p",
    "SELECT m::text FROM people",
    "SELECT upper(h) FROM hues",
    "SELECT CAST(r AS text) FROM plain_row r",
    # a domain whose CHECK runs a function, wherever a value becomes one of it
    "SELECT coalesce(d, 'x') FROM checked",
    # SQL inside a string
    "SELECT query_to_xml('select pg_advisory_lock(4243)', true, true, '')",
    "SELECT cursor_to_xml('c', 1, true, true, '')",
    "SELECT table_to_xml('items', true, true, '')",
    "SELECT dblink_exec('dbname={db} user=postgres', 'DELETE FROM items')",
    "SELECT \"dblink_exec\"('dbname={db} user=postgres', 'DELETE FROM items')",
    "SELECT * FROM dblink('dbname={db} user=postgres', 'DELETE FROM items RETURNING id') AS t(id int)",
    "SELECT public.dblink_exec('dbname={db} user=postgres', 'DELETE FROM items')",
    # signals and other sessions
    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'victim-{tag}'",
    "SELECT \"pg_terminate_backend\"(pid) FROM pg_stat_activity WHERE application_name = 'victim-{tag}'",
    "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'victim-{tag}'",
    # files and large objects
    "SELECT pg_read_file('/etc/passwd')",
    "SELECT \"pg_read_file\"('/etc/passwd')",
    "SELECT pg_read_binary_file('/etc/passwd')",
    "SELECT * FROM pg_ls_dir('/')",
    "SELECT pg_stat_file('/etc/passwd')",
    "SELECT lo_import('/etc/passwd')",
    "SELECT lo_export(lo_from_bytea(0, 'x'), '{out}')",
    "SELECT lo_create(0)",
    # replication, statistics, configuration, sequences
    "SELECT pg_create_physical_replication_slot('slot_{tag}')",
    "SELECT pg_create_logical_replication_slot('slot_{tag}', 'pgoutput')",
    "SELECT pg_stat_reset()",
    "SELECT pg_stat_reset_shared('bgwriter')",
    "SELECT set_config('default_transaction_read_only', 'off', false)",
    "SELECT pg_reload_conf()",
    "SELECT nextval('items_seq_{tag}')",
    # extension functions and user-defined code
    "SELECT gen_random_bytes(16)",
    "SELECT 'x'::evil_{tag}",
    # what the engine and the parser could read differently
    "SELECT 1 /* */ , pg_advisory_lock(4242)",
    "SELECT 'a\\', pg_advisory_lock(4242), 'b'",
    "SELECT $$x$$, pg_advisory_lock(4242)",
    "SELECT E'\\'', pg_advisory_lock(4242), ''",
    "SELECT 1 -- ; SELECT pg_advisory_lock(4242)\n",
    "SELECT 1; SELECT pg_advisory_lock(4242)",
    # state for the next call
    "LISTEN evil",
    "PREPARE p AS SELECT pg_advisory_lock(4242)",
    "DECLARE c CURSOR WITH HOLD FOR SELECT 1",
    "SELECT * INTO TEMP stash FROM items",
]

MY_CASES = [
    "SELECT `sleep`(1)",
    "SELECT SLEEP(1)",
    "SELECT BENCHMARK(100000000, MD5('x'))",
    "SELECT GET_LOCK('bypass_{tag}', 0)",
    "SELECT `GET_LOCK`('bypass_{tag}', 0)",
    "SELECT IS_FREE_LOCK('bypass_{tag}'), GET_LOCK('bypass_{tag}', 0)",
    "SELECT LOAD_FILE('/etc/passwd')",
    "SELECT `load_file`('/etc/passwd')",
    "SELECT * FROM items INTO OUTFILE '{out}'",
    "SELECT name FROM items INTO DUMPFILE '{out}'",
    "SELECT 1 /*!50000 , SLEEP(1) */",
    "SELECT 1 /*M! , GET_LOCK('bypass_{tag}', 0) */",
    "SELECT 1 # , GET_LOCK('bypass_{tag}', 0)",
    "SELECT 'a\\'', GET_LOCK('bypass_{tag}', 0), ''",
    "SELECT @v := 1",
    "SELECT 1 INTO @v",
    "SELECT test.f(1)",
    "SELECT mysql.sys_exec('id')",
    # names MariaDB has no built-in of (sqlglot knows them, or another engine has them): a stored function runs
    "SELECT initcap('a')",
    "SELECT array_sum(1)",
    "SELECT cbrt(1)",
    "SELECT string_agg('a', ',')",
    # a view whose definition calls a stored function, directly or through another view
    "SELECT * FROM killing",
    "SELECT id FROM killing_again",
    "SELECT 1; SELECT GET_LOCK('bypass_{tag}', 0)",
]

SQLITE_CASES = [
    "SELECT load_extension('/tmp/evil')",
    "SELECT readfile('/etc/passwd')",
    "SELECT writefile('{out}', 'x')",
    "ATTACH DATABASE '{out}' AS evil",
    "VACUUM INTO '{out}'",
    "PRAGMA writable_schema = ON",
    "SELECT 1 /* */ , load_extension('/tmp/evil')",
]


def _service(url: str) -> Engine:
    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    with engine.connect() as connection:
        connection.execute(text("SELECT 1"))
    return engine


def _victim_killer(name: str, argument: str = "text", returns: str = "boolean") -> str:
    """A user-defined function `name(argument)` that signals the victim session: an effect no rollback undoes."""
    body = f"SELECT bool_or(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'victim-{TAG}'"
    if returns != "boolean":
        body = f"SELECT ({body})::{returns}"
    quoted_body = body.replace("'", "''")
    return f"CREATE FUNCTION \"{name}\"({argument}) RETURNS {returns} LANGUAGE sql AS '{quoted_body}'"


class Postgres:
    """A scratch database with the extensions, a sequence, a user-defined type, a reader role and a victim."""

    def __init__(self) -> None:
        self.name = f"mcpdb_bypass_{TAG}"
        self.reader = f"mcpdb_reader_{TAG}"
        self.admin = _service(PG_ADMIN)
        with self.admin.connect() as connection:
            connection.execute(text(f"CREATE DATABASE {self.name}"))
            connection.execute(text(f"CREATE ROLE {self.reader} LOGIN"))
        self.owner_url = f"postgresql+psycopg://postgres@127.0.0.1:5432/{self.name}"
        self.reader_url = f"postgresql+psycopg://{self.reader}@127.0.0.1:5432/{self.name}"
        self.owner = create_engine(self.owner_url, isolation_level="AUTOCOMMIT")
        with self.owner.connect() as connection:
            for statement in [
                "CREATE EXTENSION IF NOT EXISTS dblink",
                "CREATE EXTENSION IF NOT EXISTS pgcrypto",
                "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL)",
                "INSERT INTO items VALUES (1, 'a'), (2, 'b'), (3, 'c')",
                f"CREATE SEQUENCE items_seq_{TAG}",
                f"CREATE DOMAIN evil_{TAG} AS TEXT",
                # User-defined functions whose names differ from built-ins only by case, which quoting keeps,
                # that are no built-in's, or that overload one.
                *(_victim_killer(name) for name in ("UPPER", "Lower", "COUNT", "median", "first", "log2", "sha1")),
                _victim_killer("upper", "integer"),
                *(f'CREATE DOMAIN "{name}" AS text CHECK ("Lower"(VALUE))' for name in ("datetime", "tinyint", "Text")),
                _victim_killer("plus_text", "text, text"),
                "CREATE OPERATOR + (LEFTARG = text, RIGHTARG = text, FUNCTION = plus_text)",
                # Code a plain SELECT of a relation runs: a view's, a view's view's, a row-level policy's.
                'CREATE VIEW lowered AS SELECT id, "Lower"(name) AS l FROM items',
                "CREATE VIEW lowered_again AS SELECT * FROM lowered",
                "CREATE VIEW plain AS SELECT id, lower(name) AS l FROM items",  # built-in code only: readable
                # A foreign table whose every read runs a program on the host (file_fdw), and a view of it.
                "CREATE EXTENSION IF NOT EXISTS file_fdw",
                "CREATE SERVER host_files FOREIGN DATA WRAPPER file_fdw",
                f"CREATE FOREIGN TABLE host_program (line text) SERVER host_files OPTIONS (program 'touch {OUT}')",
                "CREATE VIEW host_view AS SELECT * FROM host_program",
                "CREATE TABLE guarded (id INTEGER PRIMARY KEY, name TEXT NOT NULL)",
                "INSERT INTO guarded VALUES (1, 'a')",
                "ALTER TABLE guarded ENABLE ROW LEVEL SECURITY",
                'CREATE POLICY seen ON guarded USING ("Lower"(name))',
                # Casts a type's owner defines (no superuser needed): converting a value of the type runs them.
                "CREATE TYPE addr AS (street text)",
                "CREATE TYPE mood AS ENUM ('ok', 'sad')",
                "CREATE TYPE hue AS ENUM ('red')",
                "CREATE TABLE people (id INTEGER PRIMARY KEY, a addr, m mood)",
                "INSERT INTO people VALUES (1, ROW('x'), 'ok')",
                "CREATE TABLE hues (id INTEGER PRIMARY KEY, h hue)",
                "INSERT INTO hues VALUES (1, 'red')",
                _victim_killer("addr_text", "addr", "text"),
                _victim_killer("mood_text", "mood", "text"),
                _victim_killer("people_text", "people", "text"),
                _victim_killer("hue_text", "hue", "text"),
                "CREATE CAST (addr AS text) WITH FUNCTION addr_text(addr)",
                "CREATE CAST (mood AS text) WITH FUNCTION mood_text(mood)",
                "CREATE CAST (people AS text) WITH FUNCTION people_text(people)",
                "CREATE CAST (hue AS text) WITH FUNCTION hue_text(hue) AS IMPLICIT",
                "CREATE TABLE plain_row (id INTEGER PRIMARY KEY)",  # built-in columns, a cast of its row type
                "INSERT INTO plain_row VALUES (1)",
                _victim_killer("plain_row_text", "plain_row", "text"),
                "CREATE CAST (plain_row AS text) WITH FUNCTION plain_row_text(plain_row)",
                _victim_killer("dom_check", "text"),
                "CREATE DOMAIN checked_text AS text CHECK (dom_check(VALUE))",
                "CREATE TABLE checked (id INTEGER PRIMARY KEY, d checked_text)",
                "INSERT INTO checked VALUES (1, 'a')",
                # Foreign tables reached through a parent: a partition, an inheritance child, a view of the parent.
                "CREATE TABLE part_parent (line text) PARTITION BY LIST (line)",
                f"CREATE FOREIGN TABLE part_child PARTITION OF part_parent DEFAULT SERVER host_files "
                f"OPTIONS (program 'touch {OUT}')",
                "CREATE TABLE inh_parent (line text)",
                f"CREATE FOREIGN TABLE inh_child () INHERITS (inh_parent) SERVER host_files "
                f"OPTIONS (program 'touch {OUT}')",
                "CREATE VIEW parent_view AS SELECT * FROM inh_parent",
                # Views calling built-in and extension functions that reach outside the statement.
                f"CREATE VIEW v_kill AS SELECT pg_terminate_backend(pid) AS k FROM pg_stat_activity "
                f"WHERE application_name = 'victim-{TAG}'",
                f"CREATE VIEW v_dblink AS SELECT dblink_exec('dbname={self.name} user=postgres', "
                "'DELETE FROM items') AS d",
                "CREATE VIEW v_file AS SELECT pg_read_file('/etc/passwd') AS f",
                # A row-level policy calling a built-in with an effect (it applies to the reader, not a superuser).
                "CREATE TABLE policed (id INTEGER PRIMARY KEY)",
                "INSERT INTO policed VALUES (1)",
                "ALTER TABLE policed ENABLE ROW LEVEL SECURITY",
                f"CREATE POLICY killing ON policed USING ((SELECT bool_or(pg_terminate_backend(pid)) "
                f"FROM pg_stat_activity WHERE application_name = 'victim-{TAG}') IS NULL)",
                "GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO PUBLIC",
                f"GRANT CONNECT ON DATABASE {self.name} TO {self.reader}",
                f"GRANT USAGE ON SCHEMA public TO {self.reader}",
                f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {self.reader}",
                f"GRANT USAGE ON SEQUENCE items_seq_{TAG} TO {self.reader}",
            ]:
                connection.execute(text(statement))
        # A session of the reader's own role: the least-privilege role may signal those, and must not.
        victim = f"postgresql+psycopg://{self.reader}@127.0.0.1:5432/{self.name}?application_name=victim-{TAG}"
        self.victim_engine = create_engine(victim)
        self.victim = self.victim_engine.connect()

    def state(self) -> dict[str, Any]:
        with self.owner.connect() as c:
            return {
                "rows": c.execute(text("SELECT id, name FROM items ORDER BY id")).all(),
                "advisory": c.execute(text("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'")).scalar(),
                "slots": c.execute(text("SELECT count(*) FROM pg_replication_slots")).scalar(),
                "stats_reset": c.execute(
                    text("SELECT stats_reset FROM pg_stat_database WHERE datname = current_database()")
                ).scalar(),
                "bgwriter_reset": c.execute(text("SELECT stats_reset FROM pg_stat_bgwriter")).scalar(),
                "large_objects": c.execute(text("SELECT count(*) FROM pg_largeobject_metadata")).scalar(),
                "sequence": c.execute(text(f"SELECT last_value, is_called FROM items_seq_{TAG}")).one(),
                "victim": self.victim.execute(text("SELECT 1")).scalar(),
                "out": OUT.exists(),
            }

    def close(self) -> None:
        self.victim.close()
        self.victim_engine.dispose()
        self.owner.dispose()
        with self.admin.connect() as connection:
            connection.execute(text(f"DROP DATABASE {self.name} WITH (FORCE)"))
            connection.execute(text(f"DROP ROLE {self.reader}"))
        self.admin.dispose()


@pytest.fixture(scope="module")
def pg() -> Iterator[Postgres]:
    database = Postgres()
    yield database
    database.close()


class MariaDB:
    def __init__(self) -> None:
        self.name = f"mcpdb_bypass_{TAG}"
        self.admin = _service(MY_ADMIN)
        with self.admin.connect() as connection:
            connection.execute(text(f"CREATE DATABASE {self.name}"))
            connection.execute(text(f"CREATE TABLE {self.name}.items (id INTEGER PRIMARY KEY, name TEXT NOT NULL)"))
            connection.execute(text(f"INSERT INTO {self.name}.items VALUES (1, 'a'), (2, 'b'), (3, 'c')"))
        self.url = f"mysql+pymysql://root@127.0.0.1:3306/{self.name}"
        # The least-privilege user docs/db-least-privilege.md asks for.
        self.reader = f"mcpdb_reader_{TAG}"
        with self.admin.connect() as connection:
            connection.execute(text(f"CREATE USER '{self.reader}'@'%'"))
            connection.execute(text(f"GRANT SELECT, SHOW VIEW ON {self.name}.* TO '{self.reader}'@'%'"))
        self.reader_url = f"mysql+pymysql://{self.reader}@127.0.0.1:3306/{self.name}"
        self.victim_engine = create_engine(self.url)
        self.victim = self.victim_engine.connect()
        self.victim_id = self.victim.execute(text("SELECT CONNECTION_ID()")).scalar()
        # Stored functions named as no built-in of MariaDB is (other engines have them, or sqlglot knows them):
        # each kills the victim, an effect no rollback undoes.
        with self.admin.connect() as connection:
            for call in ["initcap(a TEXT)", "array_sum(a INT)", "cbrt(a INT)", "string_agg(a TEXT, b TEXT)"]:
                connection.execute(
                    text(f"CREATE FUNCTION {self.name}.{call} RETURNS INT BEGIN KILL {self.victim_id:d}; RETURN 1; END")
                )
            # A view runs as its definer (root): its stored function runs for whoever reads it, the reader too.
            for statement in [
                f"CREATE VIEW {self.name}.killing AS SELECT id, {self.name}.cbrt(id) AS k FROM {self.name}.items",
                f"CREATE VIEW {self.name}.killing_again AS SELECT * FROM {self.name}.killing",
                f"CREATE VIEW {self.name}.plain AS SELECT id, LOWER(name) AS l FROM {self.name}.items",
            ]:
                connection.execute(text(statement))

    def state(self) -> dict[str, Any]:
        with self.admin.connect() as c:
            return {
                "rows": c.execute(text(f"SELECT id, name FROM {self.name}.items ORDER BY id")).all(),
                "lock": c.execute(text(f"SELECT IS_USED_LOCK('bypass_{TAG}')")).scalar(),
                "victim": self.victim.execute(text("SELECT CONNECTION_ID()")).scalar() == self.victim_id,
                "out": OUT.exists(),
            }

    def close(self) -> None:
        self.victim.close()
        self.victim_engine.dispose()
        with self.admin.connect() as connection:
            connection.execute(text(f"DROP DATABASE {self.name}"))
            connection.execute(text(f"DROP USER '{self.reader}'@'%'"))
        self.admin.dispose()


@pytest.fixture(scope="module")
def my() -> Iterator[MariaDB]:
    database = MariaDB()
    yield database
    database.close()


@pytest.fixture(params=["superuser", "reader"])
async def pg_client(request: pytest.FixtureRequest, pg: Postgres) -> AsyncIterator[Client[Any]]:
    if request.param == "superuser":
        settings = DbSettings(url=pg.owner_url, allow_privileged_role=True, toolsets="all", schema_poll_s=0)
    else:
        settings = DbSettings(url=pg.reader_url, toolsets="all", schema_poll_s=0)
    async with Client(build_server(settings)) as client:
        yield client


def _sql(template: str, **names: str) -> str:
    return template.replace("{tag}", TAG).replace("{out}", str(OUT)).replace("{db}", names.get("db", ""))


async def _refused(client: Client[Any], sql: str) -> str:
    for tool in ("run_query", "explain_query"):
        result = await client.call_tool_mcp(tool, {"sql": sql})
        text_ = "\n".join(getattr(block, "text", "") for block in result.content)
        assert result.is_error, f"{tool} ran {sql!r}: {text_}"
    return text_


@pytest.mark.parametrize("case", PG_CASES)
async def test_postgres_bypasses_are_refused_and_change_nothing(
    case: str, pg: Postgres, pg_client: Client[Any]
) -> None:
    before = pg.state()
    await _refused(pg_client, _sql(case, db=pg.name))
    assert pg.state() == before


async def test_a_never_function_reached_through_a_view_stays_refused_whatever_the_operator_allows(
    pg: Postgres,
) -> None:
    before = pg.state()
    settings = DbSettings(
        url=pg.owner_url, allow_privileged_role=True, allow_functions=["dblink_exec"], schema_poll_s=0
    )
    async with Client(build_server(settings)) as client:
        result = await client.call_tool_mcp("run_query", {"sql": "SELECT * FROM v_dblink"})
    assert result.is_error
    assert "--allow-function" not in result.content[0].text  # type: ignore[union-attr]
    assert pg.state() == before


async def test_a_policy_calling_a_built_in_with_an_effect_is_refused_for_the_role_it_applies_to(
    pg: Postgres,
) -> None:
    """The catalog records no dependency on built-ins: a policy's pg_terminate_backend is seen only in the plan."""
    before = pg.state()
    async with Client(build_server(DbSettings(url=pg.reader_url, toolsets="all", schema_poll_s=0))) as client:
        said = await _refused(client, "SELECT count(*) FROM policed")
    assert "pg_terminate_backend()" in said
    assert pg.state() == before


async def test_reading_columns_of_types_with_casts_of_their_own_runs_none_of_them(
    pg: Postgres, pg_client: Client[Any]
) -> None:
    """The server cuts long values in the database; it made every column text with ::text, which ran the cast a
    type's owner defined (here: one that kills the victim session) for a plain SELECT *."""
    before = pg.state()
    for sql in ["SELECT * FROM people", "SELECT p.id, p.a, p.m, p FROM people p ORDER BY 1"]:
        result = await pg_client.call_tool_mcp("run_query", {"sql": sql})
        assert not result.is_error, result.content
        assert result.structured_content["rows"][0][:3] == [1, "(x)", "ok"]  # type: ignore[index]
    assert pg.state() == before


@pytest.mark.parametrize("role", ["root", "reader"])
@pytest.mark.parametrize("case", MY_CASES)
async def test_mariadb_bypasses_are_refused_and_change_nothing(case: str, role: str, my: MariaDB) -> None:
    before = my.state()
    if role == "root":
        settings = DbSettings(url=my.url, allow_privileged_role=True, toolsets="all", schema_poll_s=0)
    else:
        settings = DbSettings(url=my.reader_url, toolsets="all", schema_poll_s=0)
    async with Client(build_server(settings)) as client:
        await _refused(client, _sql(case))
    assert my.state() == before


@pytest.mark.parametrize("case", SQLITE_CASES)
async def test_sqlite_bypasses_are_refused_and_change_nothing(case: str, tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "t.db"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT)")
        connection.execute("INSERT INTO items VALUES (1, 'a')")
    connection.close()
    before = path.read_bytes()
    async with Client(build_server(DbSettings(url=f"sqlite:///{path}", toolsets="all", schema_poll_s=0))) as client:
        await _refused(client, _sql(case))
    assert path.read_bytes() == before
    assert not OUT.exists()


def test_every_listed_function_is_a_built_in_of_the_engine(pg: Postgres, my: MariaDB) -> None:
    """A listed name the engine has no built-in of resolves to whatever function of that name the database holds.

    PostgreSQL: a function of pg_catalog, or a keyword the grammar reads itself (coalesce, current_date), which
    cannot name a user's function. MariaDB: calling the name never says no such function exists (error 1305).
    """
    with pg.owner.connect() as c:
        missing = c.execute(
            text(
                "SELECT name FROM unnest(CAST(:names AS text[])) AS name WHERE NOT EXISTS (SELECT FROM pg_proc "
                "WHERE proname = name AND pronamespace = 'pg_catalog'::regnamespace) AND NOT EXISTS "
                "(SELECT FROM pg_get_keywords() WHERE word = name AND catcode IN ('C', 'R')) ORDER BY 1"
            ),
            {"names": sorted(ALLOWED_NAMES["postgresql"])},
        ).scalars()
        assert list(missing) == []
        # The volatile built-ins the plan check lets through as reads are PostgreSQL's own, by those names.
        unknown_reads = c.execute(
            text(
                "SELECT name FROM unnest(CAST(:names AS text[])) AS name WHERE NOT EXISTS (SELECT FROM pg_proc "
                "WHERE proname = name AND pronamespace = 'pg_catalog'::regnamespace AND oid < 16384) ORDER BY 1"
            ),
            {"names": sorted(PG_VOLATILE_READS)},
        ).scalars()
        assert list(unknown_reads) == []
    unknown = []
    with my.admin.connect() as c:
        c.execute(text(f"USE {my.name}"))
        for name in sorted(ALLOWED_NAMES["mysql"]):
            try:
                c.exec_driver_sql(f"SELECT {name}()")
            except DBAPIError as exc:
                if exc.orig is not None and exc.orig.args[0] == 1305:  # FUNCTION db.name does not exist
                    unknown.append(name)
    assert unknown == []


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("describe_tables", {"tables": ["lowered_again"], "sample_rows": 1}),
        ("describe_tables", {"tables": ["host_program"], "sample_rows": 1}),
        ("distinct_values", {"table": "lowered", "column": "l"}),
        ("distinct_values", {"table": "guarded", "column": "name"}),
    ],
)
async def test_sampling_a_relation_that_runs_the_databases_own_code_is_refused_and_changes_nothing(
    tool: str, arguments: dict[str, Any], pg: Postgres, pg_client: Client[Any]
) -> None:
    """describe_tables' sample rows and distinct_values read relations with SQL of their own, not the model's:
    the same check stands before them."""
    before = pg.state()
    result = await pg_client.call_tool_mcp(tool, arguments)
    assert result.is_error, f"{tool} ran: {result.content}"
    assert pg.state() == before


async def test_sampling_a_mariadb_view_that_calls_a_stored_function_is_refused(my: MariaDB) -> None:
    # As root: the least-privilege user cannot even describe such a view (no EXECUTE on the function).
    before = my.state()
    settings = DbSettings(url=my.url, allow_privileged_role=True, toolsets="all", schema_poll_s=0)
    async with Client(build_server(settings)) as client:
        sampled = await client.call_tool_mcp("describe_tables", {"tables": ["killing"], "sample_rows": 1})
        counted = await client.call_tool_mcp("distinct_values", {"table": "killing_again", "column": "k"})
    assert sampled.is_error
    assert counted.is_error
    assert my.state() == before


async def test_a_mariadb_view_of_built_ins_is_read_and_one_calling_a_stored_function_is_refused_naming_it(
    my: MariaDB,
) -> None:
    async with Client(build_server(DbSettings(url=my.reader_url, schema_poll_s=0))) as client:
        plain = await client.call_tool_mcp("run_query", {"sql": "SELECT l FROM plain ORDER BY id LIMIT 1"})
        killing = await client.call_tool_mcp("run_query", {"sql": "SELECT id FROM killing_again"})
    assert plain.structured_content["rows"] == [["a"]]  # type: ignore[index]
    said = killing.content[0].text  # type: ignore[union-attr]
    assert killing.is_error
    assert f"the view {my.name}.killing runs its definition" in said
    assert "cbrt" in said


@pytest.mark.parametrize("role", ["root", "reader"])
async def test_a_placeholder_inside_a_quoted_string_stays_text_on_mariadb(role: str, my: MariaDB) -> None:
    """SQLAlchemy's text() took `:p` inside quotes for a placeholder, and PyMySQL writes a value into the SQL
    itself, quoted: `SELECT ':p'` became `SELECT '', <the value as SQL>, ''`, a statement the guard never saw."""
    before = my.state()
    url = my.url if role == "root" else my.reader_url
    settings = DbSettings(url=url, allow_privileged_role=True, schema_poll_s=0)
    injected = ", initcap(1) AS k, LOAD_FILE(0x2f6574632f706173737764) AS f, "
    async with Client(build_server(settings)) as client:
        result = await client.call_tool_mcp("run_query", {"sql": "SELECT ':p' AS x", "params": {"p": injected}})
    assert my.state() == before
    assert result.structured_content == {"columns": ["x"], "rows": [[":p"]], "truncated": False, "more_rows": False}


async def test_colons_inside_quotes_are_text_on_postgres(pg: Postgres) -> None:
    async with Client(build_server(DbSettings(url=pg.reader_url, schema_poll_s=0))) as client:
        result = await client.call_tool_mcp(
            "run_query", {"sql": "SELECT '10:30'::time AS t, ':p' AS p, \"a:b\" FROM (SELECT 1 AS \"a:b\") s"}
        )
    assert result.structured_content["rows"] == [["10:30:00", ":p", 1]]  # type: ignore[index]


async def test_the_refusal_names_the_function_and_the_operators_way_to_allow_it(pg: Postgres) -> None:
    settings = DbSettings(url=pg.reader_url, schema_poll_s=0)
    async with Client(build_server(settings)) as client:
        said = await client.call_tool_mcp("run_query", {"sql": "SELECT pg_advisory_lock(1)"})
        never = await client.call_tool_mcp("run_query", {"sql": "SELECT query_to_xml('select 1', true, true, '')"})
    text_ = said.content[0].text  # type: ignore[union-attr]
    assert "pg_advisory_lock()" in text_
    assert "--allow-function pg_advisory_lock" in text_
    assert "never allowed" in never.content[0].text  # type: ignore[union-attr]


async def test_a_built_in_the_database_overloads_is_refused_naming_where_unless_the_operator_allows_it(
    pg: Postgres,
) -> None:
    """The test database's own upper(integer) makes every upper() call refused; pgcrypto's gen_random_uuid beside
    the built-in does not (an extension's functions are packaged code the administrator chose)."""
    sql = {"sql": "SELECT upper(name) AS u, gen_random_uuid() IS NOT NULL AS g FROM items ORDER BY id LIMIT 1"}
    async with Client(build_server(DbSettings(url=pg.reader_url, schema_poll_s=0))) as client:
        shadowed = await client.call_tool_mcp("run_query", sql)
        extension = await client.call_tool_mcp("run_query", {"sql": "SELECT gen_random_uuid() IS NOT NULL AS g"})
        view = await client.call_tool_mcp("run_query", {"sql": "SELECT l FROM plain ORDER BY id LIMIT 1"})
    said = shadowed.content[0].text  # type: ignore[union-attr]
    assert shadowed.is_error
    assert "upper() (in schema public)" in said
    assert "--allow-function upper" in said
    assert not extension.is_error, extension
    assert view.structured_content["rows"] == [["a"]]  # type: ignore[index]
    allowed = DbSettings(url=pg.reader_url, allow_functions=["upper"], schema_poll_s=0)
    async with Client(build_server(allowed)) as client:
        ran = await client.call_tool_mcp("run_query", sql)
    assert ran.structured_content["rows"] == [["A", True]]  # type: ignore[index]


async def test_an_allowed_function_runs_but_nothing_it_leaves_reaches_the_next_call(pg: Postgres) -> None:
    """The operator allowed a lock function: it runs, and the lock is gone once the call returns (DISCARD ALL)."""
    settings = DbSettings(
        url=pg.reader_url, allow_functions=["pg_advisory_lock", "set_config", "current_setting"], schema_poll_s=0
    )
    async with Client(build_server(settings)) as client:
        locked = await client.call_tool_mcp("run_query", {"sql": "SELECT pg_advisory_lock(77) AS locked"})
        assert not locked.is_error, locked
        assert pg.state()["advisory"] == 0, "the advisory lock outlived the call"
        await client.call_tool_mcp("run_query", {"sql": "SELECT set_config('work_mem', '1234kB', false) AS s"})
        for _ in range(3):  # whichever pooled connection answers, the setting is its default again
            after = await client.call_tool_mcp("run_query", {"sql": "SELECT current_setting('work_mem') AS w"})
            assert after.structured_content["rows"] != [["1234kB"]]  # type: ignore[index]


def test_session_state_never_survives_a_checkout_on_postgres(pg: Postgres) -> None:
    db = Database(pg.reader_url)
    try:
        with db.connect() as connection:
            raw: Any = connection.connection.dbapi_connection
            pid = raw.info.backend_pid
            for sql in ["LISTEN evil", "SET work_mem = '1234kB'", "PREPARE p AS SELECT 1"]:
                connection.exec_driver_sql(sql)
            connection.exec_driver_sql("SELECT pg_advisory_lock(78)")
            connection.exec_driver_sql("DECLARE held CURSOR WITH HOLD FOR SELECT 1")
            connection.commit()  # committed state too: LISTEN, the held cursor (temp tables: read-only refuses them)
        with db.connect() as first, db.connect() as second:  # the pool's one idle connection is among these
            for connection in (first, second):
                raw = connection.connection.dbapi_connection
                checks = connection.exec_driver_sql(
                    "SELECT (SELECT count(*) FROM pg_listening_channels()), current_setting('work_mem'), "
                    "(SELECT count(*) FROM pg_prepared_statements), "
                    "(SELECT count(*) FROM pg_cursors)"
                ).one()
                if raw.info.backend_pid == pid:
                    break
            else:
                pytest.fail("the connection that held the state was not reused")
        assert checks[0] == 0
        assert checks[1] != "1234kB"
        assert checks[2] == 0
        assert checks[3] == 0
        assert pg.state()["advisory"] == 0
    finally:
        db.close()


def test_session_state_never_survives_a_checkout_on_mariadb(my: MariaDB) -> None:
    db = Database(my.url, allow_privileged_role=True)
    try:
        with db.connect() as connection:
            thread = connection.exec_driver_sql("SELECT CONNECTION_ID()").scalar()
            for sql in ["SET @v = 42", f"SELECT GET_LOCK('bypass_{TAG}', 0)", "PREPARE p FROM 'SELECT 1'"]:
                connection.exec_driver_sql(sql)
        assert my.state()["lock"] is None, "the named lock outlived the call"
        with db.connect() as first, db.connect() as second:
            for connection in (first, second):
                if connection.exec_driver_sql("SELECT CONNECTION_ID()").scalar() == thread:
                    assert connection.exec_driver_sql("SELECT @v").scalar() is None
                    break
            else:
                pytest.fail("the connection that held the state was not reused")
    finally:
        db.close()


async def _first_call(settings: DbSettings) -> tuple[bool, str]:
    """The server starts without connecting; its first call is where the database and its role are met."""
    async with Client(build_server(settings)) as client:
        result = await client.call_tool_mcp("run_query", {"sql": "SELECT 1"})
    return bool(result.is_error), "\n".join(getattr(block, "text", "") for block in result.content)


async def test_a_privileged_role_is_refused_at_the_first_call_with_the_sql_to_fix_it(pg: Postgres) -> None:
    refused, message = await _first_call(DbSettings(url=pg.owner_url, schema_poll_s=0))
    assert refused
    assert "superuser" in message
    assert "CREATE ROLE mcp_reader" in message
    assert "--allow-privileged-role" in message


async def test_a_privileged_role_is_refused_at_every_call_and_every_read_not_only_the_first(pg: Postgres) -> None:
    # The role is checked at each new connection, not once at start: a refusal must not be spent by the first call.
    async with Client(build_server(DbSettings(url=pg.owner_url, schema_poll_s=0))) as client:
        calls = [await client.call_tool_mcp("run_query", {"sql": "SELECT 1"}) for _ in range(3)]
        calls.append(await client.call_tool_mcp("describe_tables", {"tables": ["pg_class"]}))
        calls.append(await client.call_tool_mcp("find_objects", {}))
        with pytest.raises(Exception, match="superuser"):
            await client.read_resource("db://schema")
    for result in calls:
        assert result.is_error
        assert "superuser" in "\n".join(getattr(block, "text", "") for block in result.content)


def test_a_role_granted_powers_later_is_refused_at_its_next_connection(pg: Postgres) -> None:
    """Powers held through membership count even without INHERIT (SET ROLE would reach them)."""
    member = f"mcpdb_signaller_{TAG}"
    with pg.admin.connect() as c:
        c.execute(text(f"CREATE ROLE {member} LOGIN NOINHERIT"))
        c.execute(text(f"GRANT CONNECT ON DATABASE {pg.name} TO {member}"))
    url = f"postgresql+psycopg://{member}@127.0.0.1:5432/{pg.name}"
    db = Database(url)
    try:
        with db.connect() as connection:  # a plain role: accepted
            assert connection.exec_driver_sql("SELECT 1").scalar() == 1
        with pg.admin.connect() as c:
            c.execute(text(f"GRANT pg_signal_backend TO {member}"))
        db.engine.dispose()  # the next connection is a new one, checked again
        with pytest.raises(PrivilegedRole, match="member of pg_signal_backend"), db.connect():
            pass
    finally:
        db.close()
        with pg.admin.connect() as c:
            c.execute(text(f"REVOKE pg_signal_backend FROM {member}"))
            c.execute(text(f"REVOKE CONNECT ON DATABASE {pg.name} FROM {member}"))
            c.execute(text(f"DROP ROLE {member}"))


async def test_mariadb_file_and_process_privileges_are_refused(my: MariaDB) -> None:
    refused, message = await _first_call(DbSettings(url=my.url, schema_poll_s=0))
    assert refused
    assert re.search(r"SUPER|ALL PRIVILEGES|FILE|PROCESS", message), message


assert os.sep  # the file-writing cases aim at OUT under the temp folder, on every platform
