"""Schema resources and their change notifications, sample rows, distinct values, prompts and write mode.

All on a copy of the bundled sample (SQLite); the engine tests run the same on PostgreSQL and MariaDB.
"""

from __future__ import annotations

import asyncio
import hashlib
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.server.providers import LocalProvider
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_server_core.testing import StdioWire, python_module
from mcp_server_db.database import sample_path
from mcp_server_db.server import build_server
from mcp_server_db.settings import DbSettings


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    target = tmp_path / "shop.db"
    shutil.copy(sample_path(), target)
    return target


def _url(path: Path) -> str:
    return f"sqlite:///{path}"


def _text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _attack_file_exists() -> bool:
    return Path("/tmp/mcpdb-write-attack.db").exists()


def _listener(heard: list[tuple[str, str | None]]) -> Any:
    async def on_message(message: Any) -> None:
        root = getattr(message, "root", message)
        method = getattr(root, "method", None)
        if method:
            params = getattr(root, "params", None)
            heard.append((method, str(getattr(params, "uri", "")) or None))

    return on_message


async def test_every_table_is_a_resource_and_the_overview_lists_them() -> None:
    async with Client(build_server(DbSettings())) as client:
        uris = {str(r.uri) for r in await client.list_resources()}
        templates = {t.uri_template for t in await client.list_resource_templates()}
        overview = (await client.read_resource("db://schema"))[0]
        orders = (await client.read_resource("db://tables/orders"))[0]
    assert {"db://schema", "db://tables/customers", "db://tables/orders", "db://tables/order_totals"} <= uris
    assert "db://tables/{name}" in templates
    assert "table orders (id INTEGER" in getattr(overview, "text", "")
    assert "customer_id INTEGER NOT NULL REFERENCES customers(id)" in getattr(orders, "text", "")


def _tables(path: Path, count: int) -> str:
    with sqlite3.connect(path) as db:
        for n in range(count):
            db.execute(f"CREATE TABLE t{n:04d} (id INTEGER PRIMARY KEY)")
    return _url(path)


async def test_the_comparisons_made_to_serve_tables_do_not_grow_with_the_tables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """fastmcp's local provider compares each resource added with every one it holds: registering tables one
    by one made 5,000 tables take 16 s to start, and each table added later cost a scan of them all. Counted,
    not timed: start, a table created by a write, listing and reading cost as many comparisons on 300 tables
    as on 5."""
    comparisons = 0
    identity = LocalProvider._get_component_identity

    def counted(self: LocalProvider, component: Any) -> Any:
        nonlocal comparisons
        comparisons += 1
        return identity(self, component)

    monkeypatch.setattr(LocalProvider, "_get_component_identity", counted)
    counts, listed = [], []
    for count in (5, 300):
        comparisons = 0
        server = build_server(
            DbSettings(url=_tables(tmp_path / f"{count}.db", count), allow_write=True, schema_poll_s=0)
        )
        async with Client(server) as client:
            await client.call_tool("execute_statement", {"sql": "CREATE TABLE added (id INTEGER)"})
            listed.append({str(r.uri) for r in await client.list_resources()})
            table = (await client.read_resource("db://tables/t0004"))[0]
        counts.append(comparisons)
        assert "TABLE t0004" in getattr(table, "text", "")
    assert counts[0] == counts[1]
    assert [len(uris) for uris in listed] == [5 + 2, 300 + 2]  # the tables, the one added, the overview
    assert {"db://schema", "db://tables/added", "db://tables/t0299"} <= listed[1]


async def test_describe_tables_shows_sample_rows_and_distinct_values_count_them() -> None:
    async with Client(build_server(DbSettings(toolsets="all"))) as client:
        described = await client.call_tool("describe_tables", {"tables": ["customers"], "sample_rows": 3})
        values = await client.call_tool("distinct_values", {"table": "orders", "column": "status"})
        missing = await client.call_tool_mcp("distinct_values", {"table": "orders", "column": "stat"})
    (table,) = (described.structured_content or {})["tables"]
    assert len(table["sample"]) == 3
    assert "sample (3 rows):" in _text(described)
    counts = values.structured_content or {}
    assert counts["distinct"] == len(counts["values"]) > 1
    assert counts["values"] == sorted(counts["values"], key=lambda pair: (-pair[1], pair[0]))
    assert missing.is_error
    assert "Did you mean 'status'" in _text(missing)


async def test_the_prompts_name_the_tools_that_do_the_job() -> None:
    async with Client(build_server(DbSettings())) as client:
        names = {p.name for p in await client.list_prompts()}
        explore = await client.get_prompt("explore_table", {"table": "orders"})
    assert names == {"explore_table", "write_query", "review_query_plan"}
    text = getattr(explore.messages[0].content, "text", "")
    assert "describe_tables" in text
    assert "'orders'" in text


async def test_without_allow_write_there_is_no_tool_that_writes(copy: Path) -> None:
    async with Client(build_server(DbSettings(url=_url(copy), toolsets="all"))) as client:
        tools = await client.list_tools()
    assert all(t.annotations is not None and t.annotations.read_only_hint for t in tools)
    assert "execute_statement" not in {t.name for t in tools}


def test_allow_write_refuses_the_bundled_sample() -> None:
    with pytest.raises(ValueError, match="bundled sample database is read-only"):
        build_server(DbSettings(allow_write=True))


async def test_read_only_wins_over_allow_write(copy: Path) -> None:
    async with Client(build_server(DbSettings(url=_url(copy), allow_write=True, read_only=True))) as client:
        assert "execute_statement" not in {t.name for t in await client.list_tools()}


async def test_a_write_commits_and_a_created_table_is_announced_at_once(copy: Path) -> None:
    heard: list[tuple[str, str | None]] = []
    server = build_server(DbSettings(url=_url(copy), allow_write=True, schema_poll_s=0))
    async with Client(server, mode="legacy", message_handler=_listener(heard)) as client:
        tool = next(t for t in await client.list_tools() if t.name == "execute_statement")
        assert tool.annotations is not None
        assert tool.annotations.destructive_hint
        with pytest.warns(MCPDeprecationWarning):
            await client.session.subscribe_resource("db://tables/customers")
        updated = await client.call_tool("execute_statement", {"sql": "UPDATE customers SET country = 'NZ'"})
        created = await client.call_tool("execute_statement", {"sql": "CREATE TABLE audit (id INTEGER PRIMARY KEY)"})
        await client.call_tool("execute_statement", {"sql": "ALTER TABLE customers ADD COLUMN vip BOOLEAN"})
        await asyncio.sleep(0.3)
        uris = {str(r.uri) for r in await client.list_resources()}
    assert "row(s) affected" in _text(updated)
    assert "Committed." in _text(created)
    assert "db://tables/audit" in uris
    assert ("notifications/resources/list_changed", None) in heard
    assert ("notifications/resources/updated", "db://tables/customers") in heard
    with sqlite3.connect(copy) as check:
        assert check.execute("SELECT DISTINCT country FROM customers").fetchall() == [("NZ",)]


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE customers SET country = 'X'; DROP TABLE orders",
        "COMMIT",
        "BEGIN",
        "ATTACH DATABASE '/tmp/mcpdb-write-attack.db' AS evil",
        "INSERT INTO orders (id) VALUES (1)",  # violates NOT NULL and the primary key: the engine refuses
        "UPDATE nowhere SET x = 1",
    ],
)
async def test_a_refused_or_failed_write_changes_nothing(copy: Path, sql: str) -> None:
    before = _digest(copy)
    async with Client(build_server(DbSettings(url=_url(copy), allow_write=True, schema_poll_s=0))) as client:
        result = await client.call_tool_mcp("execute_statement", {"sql": sql})
    assert result.is_error, _text(result)
    assert _digest(copy) == before
    assert not _attack_file_exists()


async def test_a_change_made_elsewhere_is_found_by_the_poller(copy: Path) -> None:
    heard: list[tuple[str, str | None]] = []
    server = build_server(DbSettings(url=_url(copy), schema_poll_s=0.1))
    async with Client(server, mode="legacy", message_handler=_listener(heard)) as client:
        with pytest.warns(MCPDeprecationWarning):
            await client.session.subscribe_resource("db://tables/orders")
        with sqlite3.connect(copy) as other:
            other.execute("CREATE INDEX orders_by_status ON orders (status)")
            other.execute("DROP VIEW order_totals")
        for _ in range(50):
            await asyncio.sleep(0.1)
            if ("notifications/resources/list_changed", None) in heard and len(heard) >= 2:
                break
        uris = {str(r.uri) for r in await client.list_resources()}
    assert ("notifications/resources/updated", "db://tables/orders") in heard
    assert ("notifications/resources/list_changed", None) in heard
    assert "db://tables/order_totals" not in uris


def test_stdio_announces_a_table_created_through_execute_statement(copy: Path) -> None:
    argv = python_module("mcp_server_db", _url(copy), "--allow-write")
    with StdioWire(argv) as wire:
        wire.initialize()
        reply = wire.request(
            "tools/call", {"name": "execute_statement", "arguments": {"sql": "CREATE TABLE t (x INTEGER)"}}
        )
        assert reply["result"]["isError"] is False
        wire.wait_for_notification("notifications/resources/list_changed")
        assert wire.close() == 0
