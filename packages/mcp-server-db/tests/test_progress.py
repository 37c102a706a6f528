"""Long database work reports progress to a client that asked, and quick work reports none (issue 18); on real
PostgreSQL, through the MCP protocol."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest
from fastmcp import Client
from mcp_server_db.server import build_server
from mcp_server_db.settings import DbSettings
from sqlalchemy import create_engine, text

PG_ADMIN = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
SLOW_VIEWS = 4


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    """A database of its own, with a table and views whose every read sleeps a quarter of a second."""
    name = f"mcpdb_progress_{secrets.token_hex(4)}"
    admin = create_engine(PG_ADMIN, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f"CREATE DATABASE {name}"))
    url = f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"
    owner = create_engine(url)
    with owner.begin() as connection:
        connection.execute(text("CREATE TABLE items (id INTEGER PRIMARY KEY)"))
        for i in range(SLOW_VIEWS):
            connection.execute(text(f"CREATE VIEW slow_{i} AS SELECT 1 AS n, pg_sleep(0.25)::text AS waited"))
    owner.dispose()
    yield url
    with admin.connect() as connection:
        connection.execute(text(f"DROP DATABASE {name} WITH (FORCE)"))
    admin.dispose()


def _settings(url: str) -> DbSettings:
    return DbSettings(url=url, allow_privileged_role=True, schema_poll_s=0, allow_functions=["pg_sleep"])


class Seen:
    def __init__(self) -> None:
        self.notes: list[tuple[float, float | None, str | None]] = []

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.notes.append((progress, total, message))


async def test_a_long_query_reports_the_rows_fetched_and_a_quick_one_nothing(pg_url: str) -> None:
    slow = "SELECT g, pg_sleep(0.02)::text AS waited FROM generate_series(1, 60) AS g"  # about 1.2 s
    async with Client(build_server(_settings(pg_url))) as client:
        seen = Seen()
        result = await client.call_tool("run_query", {"sql": slow}, progress_handler=seen)
        assert len((result.structured_content or {})["rows"]) == 60
        assert seen.notes, "a query of over a second reports progress"
        for done, total, message in seen.notes:
            assert total is None, "how many rows will come is not known"
            assert message == f"{int(done):,} rows fetched so far"
            assert 0 < done <= 60
        assert [n[0] for n in seen.notes] == sorted({n[0] for n in seen.notes}), "progress only grows"

        quick = Seen()
        await client.call_tool(
            "run_query", {"sql": "SELECT g FROM generate_series(1, 500) AS g"}, progress_handler=quick
        )
        assert quick.notes == []


async def test_describe_tables_reports_tables_done_of_total(pg_url: str) -> None:
    tables = ["items", *(f"slow_{i}" for i in range(SLOW_VIEWS))]
    async with Client(build_server(_settings(pg_url))) as client:
        seen = Seen()
        await client.call_tool("describe_tables", {"tables": tables, "sample_rows": 1}, progress_handler=seen)
        assert seen.notes, "sampling views that take a second reports progress"
        for done, total, message in seen.notes:
            assert total == 2 * len(tables)
            assert message is not None
            assert f"of {len(tables)} tables" in message
            assert 0 < done < total
        assert [n[0] for n in seen.notes] == sorted({n[0] for n in seen.notes}), "progress only grows"

        quick = Seen()
        await client.call_tool("describe_tables", {"tables": ["items"]}, progress_handler=quick)
        assert quick.notes == []
