"""Every answer is bounded, whatever the query returns: 10 M rows, a 30 MB cell, 1,000 rows of 1 MB; and a query
abandoned at the call deadline is cancelled in the database, not left running (seen from a second connection)."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from mcp_server_core.testing import StdioWire, python_module
from mcp_server_core.testing.wire import PATIENCE_S
from mcp_server_db.server import build_server
from mcp_server_db.settings import DbSettings
from mcp_server_db.tools import QUERY_BYTES
from sqlalchemy import create_engine, text

PG = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
MY = "mysql+pymysql://root@127.0.0.1:3306/test"
ANSWER_BYTES = QUERY_BYTES + 2_000
"""The page's budget, plus the JSON-RPC and column framing around it."""

SHAPES = {
    "postgresql": {
        "ten million rows": "SELECT generate_series(1, 10000000) AS n",
        "a 30 MB cell": "SELECT repeat('x', 30000000) AS big",
        "1,000 rows of 1 MB": "SELECT g, repeat('x', 1000000) AS mb FROM generate_series(1, 1000) g",
    },
    "sqlite": {
        "ten million rows": (
            "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 10000000) SELECT n FROM c"
        ),
        "a 20 MB cell": "SELECT hex(zeroblob(10000000)) AS big",
        "1,000 rows of 1 MB": (
            "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 1000) "
            "SELECT n, hex(zeroblob(500000)) AS mb FROM c"
        ),
    },
    "mysql": {
        "a cross join of millions": (
            "SELECT a.ORDINAL_POSITION FROM information_schema.COLUMNS a, information_schema.COLUMNS b, "
            "information_schema.COLUMNS c"
        ),
        # MariaDB answers NULL for a value over max_allowed_packet (16 MiB by default): 3 MB it sends.
        "a 3 MB cell": "SELECT REPEAT('x', 3000000) AS big",
    },
}


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    path = tmp_path / "empty.db"
    sqlite3.connect(path).close()
    return f"sqlite:///{path}"


def _url(dialect: str, sqlite_url: str) -> str:
    return {"postgresql": PG, "mysql": MY, "sqlite": sqlite_url}[dialect]


@pytest.mark.parametrize(("dialect", "shape"), [(d, s) for d, shapes in SHAPES.items() for s in shapes])
async def test_a_huge_result_comes_back_within_the_budget_and_says_it_was_cut(
    dialect: str, shape: str, sqlite_url: str
) -> None:
    settings = DbSettings(url=_url(dialect, sqlite_url), allow_privileged_role=True, schema_poll_s=0)
    async with Client(build_server(settings)) as client:
        result = await client.call_tool_mcp("run_query", {"sql": SHAPES[dialect][shape]})
    assert not result.is_error, result.content
    structured: Any = result.structured_content
    answer = len(json.dumps(structured).encode()) + sum(len(b.text.encode()) for b in result.content)  # type: ignore[union-attr]
    assert len(json.dumps(structured).encode()) <= ANSWER_BYTES, shape
    assert answer <= 2 * ANSWER_BYTES, shape
    assert structured["truncated"] is True
    assert structured["rows"], "a page makes progress: at least one row"
    for row in structured["rows"]:
        for value in row:
            if isinstance(value, str) and len(value) > 1_000:
                assert value.endswith(" chars]"), "a long value is cut with a marker saying how long it was"


def _running(admin: Any, marker: str) -> int:
    """Statements the server's connections (named by application_name) are running now: DECLARE or FETCH."""
    with admin.connect() as c:
        return int(
            c.execute(
                text("SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND application_name = :m"),
                {"m": marker},
            ).scalar()
        )


def test_a_query_abandoned_at_the_deadline_is_cancelled_in_postgres(tmp_path: Path) -> None:
    marker = f"abandoned_{time.monotonic_ns()}"
    slow = f"SELECT count(*) AS {marker} FROM generate_series(1, 4000000000) g"
    argv = python_module("mcp_server_db", f"{PG}?application_name={marker}", "--allow-privileged-role")
    admin = create_engine(PG)
    try:
        with StdioWire(
            [*argv, "--schema-poll-s", "0", "--call-timeout-s", "2", "--statement-timeout-s", "120"]
        ) as wire:
            wire.initialize()
            started = time.monotonic()
            answer = wire.request("tools/call", {"name": "run_query", "arguments": {"sql": slow}}, timeout=30)
            assert answer["result"]["isError"] is True
            assert "did not finish within 2 s" in answer["result"]["content"][0]["text"]
            assert time.monotonic() - started < 15
            assert _running(admin, marker) <= 1
            deadline = time.monotonic() + 15
            while _running(admin, marker) and time.monotonic() < deadline:
                time.sleep(0.1)
            assert _running(admin, marker) == 0, "the abandoned query still runs in PostgreSQL"
            pong = wire.request("ping")
            assert pong["result"] == {}
    finally:
        admin.dispose()


def test_a_query_abandoned_by_its_client_is_cancelled_in_postgres() -> None:
    marker = f"cancelled_{time.monotonic_ns()}"
    slow = f"SELECT count(*) AS {marker} FROM generate_series(1, 4000000000) g"
    argv = python_module("mcp_server_db", f"{PG}?application_name={marker}", "--allow-privileged-role")
    admin = create_engine(PG)
    try:
        with StdioWire([*argv, "--schema-poll-s", "0"]) as wire:
            wire.initialize()
            wire.send(
                {
                    "jsonrpc": "2.0",
                    "id": 77,
                    "method": "tools/call",
                    "params": {"name": "run_query", "arguments": {"sql": slow}},
                }
            )
            deadline = time.monotonic() + PATIENCE_S  # a cold start on a busy machine: readiness, not a guess
            while not _running(admin, marker) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert _running(admin, marker), f"the query never started; the server's threads: {wire.threads()}"
            wire.notify("notifications/cancelled", {"requestId": 77, "reason": "the user stopped it"})
            deadline = time.monotonic() + 15
            while _running(admin, marker) and time.monotonic() < deadline:
                time.sleep(0.1)
            assert _running(admin, marker) == 0, "the cancelled query still runs in PostgreSQL"
    finally:
        admin.dispose()


WIDE = {
    "postgresql": "SELECT repeat('x', 300000000) AS wide, 1 AS n, ARRAY[1, 2] AS small",
    "sqlite": "SELECT hex(zeroblob(150000000)) AS wide, 1 AS n",
}
"""One 300 MB value: before the bound, it grew the server by 858 MiB on PostgreSQL and 2 GiB on SQLite."""


def _peak_mib(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(status.split("VmHWM:")[1].split()[0]) // 1024


@pytest.mark.parametrize("dialect", ["postgresql", "sqlite"])
def test_a_value_of_hundreds_of_megabytes_never_reaches_the_servers_memory(dialect: str, sqlite_url: str) -> None:
    """A page bounds rows, not bytes: PostgreSQL sends a value whole (up to 1 GB), and SQLite builds it in the
    server's own process. PostgreSQL cuts it in the database; SQLite refuses to build it."""
    argv = python_module("mcp_server_db", _url(dialect, sqlite_url), "--allow-privileged-role", "--schema-poll-s", "0")
    with StdioWire(argv) as wire:
        wire.initialize()
        wire.request("tools/call", {"name": "run_query", "arguments": {"sql": "SELECT 1 AS warm"}})
        before = _peak_mib(wire.proc.pid)
        answer = wire.request("tools/call", {"name": "run_query", "arguments": {"sql": WIDE[dialect]}}, timeout=60)
        grown = _peak_mib(wire.proc.pid) - before
    assert grown < 100, f"the server's peak memory grew by {grown} MiB"
    result = answer["result"]
    if dialect == "sqlite":
        assert result["isError"] is True
        assert "string or blob too big" in result["content"][0]["text"]
        return
    structured = result["structuredContent"]
    assert structured["columns"] == ["wide", "n", "small"]
    (row,) = structured["rows"]
    assert row[0] == "x" * 1_000 + "…[cut: 300,000,000 chars]"
    assert row[1:] == [1, "[1, 2]"], "values under the bound come as they would without it"
    assert structured["truncated"] is True


def test_a_stored_value_of_hundreds_of_megabytes_is_cut_in_the_database_for_sample_rows() -> None:
    """describe_tables' sample rows are bounded as run_query's are: a stored 300 MB value (compressed to a few
    MB on disk) was fetched whole into the server to be cut at 1,000 characters there."""
    table = f"wide_sample_{time.monotonic_ns()}"
    admin = create_engine(PG)
    with admin.begin() as c:
        c.execute(text(f"CREATE TABLE {table} (id integer, body text)"))
        c.execute(text(f"INSERT INTO {table} VALUES (1, repeat('x', 300000000))"))
    try:
        argv = python_module("mcp_server_db", PG, "--allow-privileged-role", "--schema-poll-s", "0")
        with StdioWire(argv) as wire:
            wire.initialize()
            wire.request("tools/call", {"name": "run_query", "arguments": {"sql": "SELECT 1 AS warm"}})
            before = _peak_mib(wire.proc.pid)
            arguments = {"tables": [table], "sample_rows": 1}
            answer = wire.request("tools/call", {"name": "describe_tables", "arguments": arguments}, timeout=60)
            grown = _peak_mib(wire.proc.pid) - before
        result = answer["result"]
        assert result.get("isError") is not True, result
        assert "…[cut: 300,000,000 chars]" in json.dumps(result["structuredContent"], ensure_ascii=False)
        assert grown < 100, f"the server's peak memory grew by {grown} MiB"
    finally:
        with admin.begin() as c:
            c.execute(text(f"DROP TABLE {table}"))
        admin.dispose()


def test_a_ping_is_answered_while_a_huge_result_is_read(sqlite_url: str) -> None:
    big = SHAPES["sqlite"]["1,000 rows of 1 MB"]
    with StdioWire(python_module("mcp_server_db", sqlite_url, "--schema-poll-s", "0")) as wire:
        wire.initialize()
        wire.send(
            {
                "jsonrpc": "2.0",
                "id": 90,
                "method": "tools/call",
                "params": {"name": "run_query", "arguments": {"sql": big}},
            }
        )
        time.sleep(0.2)
        started = time.monotonic()
        pong = wire.request("ping", timeout=10)
        waited = time.monotonic() - started
        answer = wire.response_to(90, timeout=60)
    assert pong["result"] == {}
    assert waited < 2, f"ping waited {waited:.1f} s behind the query"
    assert answer["result"]["structuredContent"]["truncated"] is True


async def test_a_result_of_the_most_columns_postgresql_allows_is_cut_without_a_column_more() -> None:
    """PostgreSQL allows 1,664 result columns: the wrapper that cuts long values added one of its own, and such a
    query failed ('target lists can have at most 1664 entries')."""
    sql = "SELECT repeat('x', 5000) AS wide, " + ", ".join(f"{n} AS c{n}" for n in range(1, 1664))
    settings = DbSettings(url=PG, allow_privileged_role=True, schema_poll_s=0)
    async with Client(build_server(settings)) as client:
        result = await client.call_tool_mcp("run_query", {"sql": sql})
    assert not result.is_error, result.content
    structured = result.structured_content
    assert structured is not None
    # All 1,664 reached the server; the answer shows those that fit its budget and counts the rest.
    assert len(structured["columns"]) + structured["more_columns"] == 1664
    (row,) = structured["rows"]
    assert row[0] == "x" * 1_000 + "…[cut: 5,000 chars]"
    assert row[1:3] == [1, 2]
    assert structured["truncated"] is True


def test_many_rows_of_megabytes_on_mariadb_are_read_one_at_a_time() -> None:
    """MariaDB sends values up to its max_allowed_packet (16 MiB by default) whole: 100 rows of 15 MB grew the
    server by 329 MiB while a 14 kB answer was made of them, ten rows being held at a time."""
    argv = python_module("mcp_server_db", MY, "--allow-privileged-role", "--schema-poll-s", "0")
    sql = "SELECT seq, REPEAT('x', 15000000) AS big FROM seq_1_to_100"
    with StdioWire(argv) as wire:
        wire.initialize()
        wire.request("tools/call", {"name": "run_query", "arguments": {"sql": "SELECT 1 AS warm"}})
        before = _peak_mib(wire.proc.pid)
        answer = wire.request("tools/call", {"name": "run_query", "arguments": {"sql": sql}}, timeout=120)
        grown = _peak_mib(wire.proc.pid) - before
    structured = answer["result"]["structuredContent"]
    assert structured["rows"][0][1].endswith("…[cut: 15,000,000 chars]")
    assert structured["more_rows"] is True
    assert grown < 100, f"the server's peak memory grew by {grown} MiB"
