"""What the read-only guard's database checks cost per run_query on PostgreSQL, through the in-memory client.

    uv run python packages/mcp-server-db/scripts/guard_cost.py [postgresql+psycopg://postgres@127.0.0.1:5432/postgres]

Three statements, 200 calls each after 20 to warm up: a plain table (one catalog read), a view of it (the deep
check: the catalog, EXPLAIN of the view, its functions) and one naming no relation (no check). Prints the median
and the fastest call of each; on a loaded machine the fastest is the steadier figure. Creates and drops a table
and a view in the database it is given.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time

from fastmcp import Client
from mcp_server_db.server import build_server
from mcp_server_db.settings import DbSettings
from sqlalchemy import create_engine, text

URL = sys.argv[1] if len(sys.argv) > 1 else "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
STATEMENTS = {
    "a table": "SELECT id, name FROM mcpdb_cost_items WHERE id = 1",
    "a view of it": "SELECT * FROM mcpdb_cost_view WHERE id = 1",
    "no relation": "SELECT 1 AS one",
}


async def measure() -> None:
    settings = DbSettings(url=URL, allow_privileged_role=True, schema_poll_s=0)
    async with Client(build_server(settings)) as client:
        for label, sql in STATEMENTS.items():
            for _ in range(20):
                await client.call_tool_mcp("run_query", {"sql": sql})
            took = []
            for _ in range(200):
                started = time.perf_counter()
                result = await client.call_tool_mcp("run_query", {"sql": sql})
                took.append(time.perf_counter() - started)
                assert not result.is_error, result.content
            print(f"{label}: median {statistics.median(took) * 1000:.2f} ms, fastest {min(took) * 1000:.2f} ms")


def main() -> None:
    engine = create_engine(URL, isolation_level="AUTOCOMMIT")
    with engine.connect() as connection:
        connection.execute(text("CREATE TABLE mcpdb_cost_items (id integer PRIMARY KEY, name text)"))
        connection.execute(text("INSERT INTO mcpdb_cost_items VALUES (1, 'a')"))
        connection.execute(text("CREATE VIEW mcpdb_cost_view AS SELECT id, upper(name) AS u FROM mcpdb_cost_items"))
    try:
        asyncio.run(measure())
    finally:
        with engine.connect() as connection:
            connection.execute(text("DROP VIEW mcpdb_cost_view"))
            connection.execute(text("DROP TABLE mcpdb_cost_items"))
        engine.dispose()


if __name__ == "__main__":
    main()
