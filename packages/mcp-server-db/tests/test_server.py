"""The db server passes the family's contract on the bundled sample, and read-only holds on SQLite."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from mcp_server_core import ReferenceServer
from mcp_server_core.testing import ContractSuite, StdioWire, python_module, tools_list_bytes
from mcp_server_db.database import Database, sample_path
from mcp_server_db.server import build_server
from mcp_server_db.settings import DbSettings
from mcp_server_db.tools import QUERY_ROWS

BUDGET = 2_500

SQLITE_ATTACKS = [
    "SELECT 1; DROP TABLE orders",
    "COMMIT; DELETE FROM orders",
    "ROLLBACK; DELETE FROM orders",
    "DELETE FROM orders",
    "INSERT INTO customers (name, email, created_at) VALUES ('x', 'x@x', '2026')",
    "WITH gone AS (DELETE FROM orders RETURNING id) SELECT * FROM gone",
    "SELECT * INTO copy FROM orders",
    "ATTACH DATABASE '/tmp/mcpdb-attack.db' AS evil",
    "VACUUM INTO '/tmp/mcpdb-attack.db'",
    "PRAGMA query_only=OFF",
    "PRAGMA writable_schema=ON",
    "SELECT load_extension('/tmp/evil.so')",
    "EXPLAIN ANALYZE DELETE FROM orders",
    "EXPLAIN DELETE FROM orders",
    "CREATE TABLE evil (x)",
    "/*!50000 DROP TABLE orders */ SELECT 1",
]

TRUE_NEGATIVES = [
    "SELECT id, row_number() OVER (PARTITION BY customer_id ORDER BY ordered_at) AS n FROM orders",
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5) SELECT n FROM r",
    "EXPLAIN SELECT * FROM orders WHERE customer_id = 1",
    "EXPLAIN QUERY PLAN SELECT * FROM orders WHERE customer_id = 1",
    "VALUES (1, 'a'), (2, 'b')",
]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def sample_copy(tmp_path: Path) -> Path:
    target = tmp_path / "sample.db"
    shutil.copy(sample_path(), target)
    return target


class TestContract(ContractSuite):
    budget = BUDGET
    # SQL words in the guard's messages, not tools: PostgreSQL's schema of built-in functions.
    vocabulary = ContractSuite.vocabulary | {"pg_catalog", "set_config"}  # PostgreSQL's, named by a refusal

    @pytest.fixture
    def server(self) -> ReferenceServer:
        return build_server(DbSettings())

    def failing_calls(self) -> list[tuple[str, dict[str, Any]]]:
        return [
            *(("run_query", {"sql": sql}) for sql in SQLITE_ATTACKS),
            ("describe_tables", {"tables": ["ordrs"]}),
            ("find_objects", {"cursor": "not-a-cursor"}),
            ("run_query", {"sql": "SELECT * FROM orders WHERE id = :id"}),
        ]

    def state(self, server: ReferenceServer) -> Any:
        return _digest(sample_path())

    def sample_calls(self) -> list[tuple[str, dict[str, Any]]]:
        return [
            ("find_objects", {"detail": "full"}),
            ("find_objects", {"pattern": "id", "kinds": ["column", "index"], "detail": "summary"}),
            ("describe_tables", {"tables": ["orders", "order_items", "order_totals"]}),
            ("run_query", {"sql": "SELECT * FROM customers WHERE country = :c", "params": {"c": "US"}}),
        ]

    def stdio_command(self, tmp_path: Path) -> list[str]:
        return python_module("mcp_server_db")


def _no_attack_file() -> bool:
    return not Path("/tmp/mcpdb-attack.db").exists()


def _write(db: Database, sql: str) -> None:
    with db.connect() as connection:
        db.execute(connection, sql)
        db.execute(connection, "DELETE FROM orders")


def _text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


@pytest.mark.parametrize("sql", SQLITE_ATTACKS)
async def test_sqlite_attacks_are_refused_and_change_nothing(sample_copy: Path, sql: str) -> None:
    before = _digest(sample_copy)
    async with Client(build_server(DbSettings(url=f"sqlite:///{sample_copy}"))) as client:
        result = await client.call_tool_mcp("run_query", {"sql": sql})
    assert result.is_error, _text(result)
    assert "Refused" in _text(result)
    assert _digest(sample_copy) == before
    assert _no_attack_file()


@pytest.mark.parametrize(
    "sql",
    [
        "DELETE FROM orders",
        "ATTACH DATABASE '/tmp/mcpdb-attack.db' AS evil",
        "PRAGMA query_only=OFF",
        "CREATE TABLE evil (x)",
        "SELECT load_extension('/tmp/evil.so')",
    ],
)
def test_sqlite_engine_refuses_writes_without_the_parser(sample_copy: Path, sql: str) -> None:
    db = Database(f"sqlite:///{sample_copy}")
    before = _digest(sample_copy)
    with pytest.raises(Exception):  # noqa: B017, PT011 - any refusal will do
        _write(db, sql)
    assert _digest(sample_copy) == before


@pytest.mark.parametrize("sql", TRUE_NEGATIVES)
async def test_sqlite_reads_that_look_unusual_work(sql: str) -> None:
    async with Client(build_server(DbSettings())) as client:
        result = await client.call_tool_mcp("run_query", {"sql": sql})
    assert not result.is_error, _text(result)


async def test_run_query_says_when_more_rows_follow_and_sql_pages_and_binds_params() -> None:
    sql = "SELECT id FROM orders WHERE id <= :n ORDER BY id"
    async with Client(build_server(DbSettings())) as client:
        first = await client.call_tool("run_query", {"sql": sql, "params": {"n": 150}})
        rest = await client.call_tool(
            "run_query", {"sql": f"{sql} LIMIT 100 OFFSET {QUERY_ROWS}", "params": {"n": 150}}
        )
        empty = await client.call_tool("run_query", {"sql": sql, "params": {"n": 0}})
        injected = await client.call_tool("run_query", {"sql": "SELECT :v AS v", "params": {"v": "1; DROP TABLE x"}})
    page = first.structured_content or {}
    assert [row[0] for row in page["rows"]] == list(range(1, QUERY_ROWS + 1))
    assert page["truncated"] is True
    assert page["more_rows"] is True
    assert "more follow: add LIMIT/OFFSET" in _text(first)
    assert [row[0] for row in (rest.structured_content or {})["rows"]] == list(range(QUERY_ROWS + 1, 151))
    assert (rest.structured_content or {})["truncated"] is False
    assert _text(rest).splitlines()[-1] == "150", "a complete result ends with its last row"
    assert _text(empty) == "id\n(no rows)"
    assert (injected.structured_content or {})["rows"] == [["1; DROP TABLE x"]]


async def test_describe_tables_shows_keys_both_ways_checks_and_comments() -> None:
    async with Client(build_server(DbSettings())) as client:
        result = await client.call_tool("describe_tables", {"tables": ["orders"]})
    text = _text(result)
    assert "\nid INTEGER PRIMARY KEY\n" in text
    assert "\ncustomer_id INTEGER NOT NULL REFERENCES customers(id)\n" in text
    assert "\nREFERENCED BY order_items(order_id)\n" in text
    assert "\nCHECK (status IN" in text
    assert "\nINDEX (customer_id), (ordered_at)" in text
    assert "-- new, paid, shipped or cancelled" in text
    assert (result.structured_content or {})["tables"][0]["row_estimate"] == 300


async def test_tools_list_budget_and_the_plan_toolset() -> None:
    assert await tools_list_bytes(build_server(DbSettings())) <= BUDGET
    async with Client(build_server(DbSettings(toolsets="all"))) as client:
        result = await client.call_tool("explain_query", {"sql": "SELECT * FROM orders WHERE customer_id = 3"})
        refused = await client.call_tool_mcp("explain_query", {"sql": "DELETE FROM orders"})
    assert "ix_orders_customer" in _text(result)
    assert refused.is_error


def test_the_sample_is_deterministic(tmp_path: Path) -> None:
    import runpy

    script = Path(__file__).resolve().parent.parent / "scripts" / "make_sample.py"
    build = runpy.run_path(str(script))["build"]
    build(tmp_path / "a.db")
    build(tmp_path / "b.db")
    assert _digest(tmp_path / "a.db") == _digest(tmp_path / "b.db")


async def test_sqlite_statement_timeout_stops_a_long_read() -> None:
    slow = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r"
    async with Client(build_server(DbSettings(statement_timeout_s=0.2))) as client:
        result = await client.call_tool_mcp("run_query", {"sql": slow})
    assert result.is_error
    assert "timeout" in _text(result)


def test_the_url_comes_from_the_argument_or_the_environment(monkeypatch: pytest.MonkeyPatch, sample_copy: Path) -> None:
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{sample_copy}")
    assert DbSettings().url == f"sqlite:///{sample_copy}"
    monkeypatch.setenv("MCP_DB_URL", "sqlite:///other.db")
    assert DbSettings().url == "sqlite:///other.db"
    assert DbSettings(url="sqlite:///third.db").url == "sqlite:///third.db"


def test_many_concurrent_reads_on_sqlite_each_get_their_own_rows() -> None:
    # Forty calls in flight at once, each on its own worker thread: SQLAlchemy's default pool for SQLite
    # (SingletonThreadPool) closed connections other threads still used and the process died of SIGSEGV.
    slow = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 20000) SELECT :n, count(*) FROM r"
    # All forty at once: the per-client limit (4 running by default) is raised to let them.
    argv = python_module("mcp_server_db", "--schema-poll-s", "0", "--max-calls-per-client", "40")
    with StdioWire(argv) as wire:
        wire.initialize()
        ids = range(500, 540)
        for n in ids:
            arguments = {"sql": slow, "params": {"n": n}}
            wire.send(
                {
                    "jsonrpc": "2.0",
                    "id": n,
                    "method": "tools/call",
                    "params": {"name": "run_query", "arguments": arguments},
                }
            )
        answers = {}
        while len(answers) < len(ids):
            message = wire.receive(timeout=30)
            if "id" in message:
                answers[message["id"]] = message["result"]
        assert wire.close() == 0
    assert {n: answers[n]["structuredContent"]["rows"] for n in ids} == {n: [[n, 20000]] for n in ids}


def test_building_the_server_imports_neither_sqlalchemy_nor_the_sql_parser() -> None:
    """What the initialize answer waits for: the server is built without SQLAlchemy or sqlglot (they load at the
    first schema read, after the answer, or at the first call)."""
    probe = (
        "import sys\n"
        "from mcp_server_db.server import build_server\n"
        "from mcp_server_db.settings import DbSettings\n"
        "build_server(DbSettings(schema_poll_s=0))\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'sqlalchemy', 'sqlglot'}))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("notaurl", "must look like dialect+driver://"),
        ("oracle://scott:tiger@db/orcl", "unsupported database 'oracle'"),
        ("postgresql://reader:hunter2secret@db:port/app", "cannot be read"),
        ("sqlite:///no/such/file.db", "SQLite database file not found"),
    ],
)
def test_a_url_that_cannot_work_stops_the_server_at_start(url: str, said: str) -> None:
    done = subprocess.run(
        python_module("mcp_server_db", url),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert said in done.stderr
    assert "hunter2secret" not in done.stderr
    assert "Traceback" not in done.stderr


async def test_a_driver_that_cannot_load_fails_the_first_call_saying_so() -> None:
    url = "postgresql+nodriver://reader:hunter2secret@127.0.0.1/app"
    async with Client(build_server(DbSettings(url=url, schema_poll_s=0))) as client:
        result = await client.call_tool_mcp("run_query", {"sql": "SELECT 1"})
    assert result.is_error
    assert "driver of postgresql+nodriver://reader:***@127.0.0.1/app cannot be loaded" in _text(result)
    assert "hunter2secret" not in _text(result)
