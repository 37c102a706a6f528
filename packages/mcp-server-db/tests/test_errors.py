"""Each failure in its class, on SQLite, PostgreSQL and MariaDB (issue 27): a timeout only when the deadline was
hit, a missing placeholder value named, a column that does not exist named with the close ones, and a table
resource that does not exist a client's mistake, not a server fault in the log."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from mcp_server_db.server import build_server
from mcp_server_db.settings import DbSettings

from .test_engines import _scratch_database

PG_ADMIN = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
MY_ADMIN = "mysql+pymysql://root@127.0.0.1:3306/test"


@pytest.fixture(params=["sqlite", "postgresql", "mariadb"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database holding `items (id, name, price)`."""
    if request.param == "sqlite":
        path = tmp_path / "items.db"
        with sqlite3.connect(path) as connection:
            connection.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, price INTEGER)")
            connection.execute("INSERT INTO items VALUES (1, 'a', 10)")
        connection.close()
        yield f"sqlite:///{path}"
    elif request.param == "postgresql":
        yield from _scratch_database(
            PG_ADMIN,
            lambda name: f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}",
            "DROP DATABASE {name} WITH (FORCE)",
        )
    else:
        yield from _scratch_database(
            MY_ADMIN, lambda name: f"mysql+pymysql://root@127.0.0.1:3306/{name}", "DROP DATABASE {name}"
        )


async def _calls(url: str, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
    settings = DbSettings(url=url, allow_privileged_role=True, toolsets="all", schema_poll_s=0)
    async with Client(build_server(settings)) as client:
        return [await client.call_tool_mcp(tool, arguments) for tool, arguments in calls]


def _text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


async def test_a_column_that_does_not_exist_is_named_with_the_close_ones_and_is_no_timeout(
    url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """`timeout` and `max_statement_time` in the engine's message made a bad column read as a timeout."""
    caplog.set_level(logging.INFO)
    for column in ["timeout", "max_statement_time", "prise"]:
        (result,) = await _calls(url, ("run_query", {"sql": f"SELECT {column} FROM items"}))
        said = _text(result)
        assert result.is_error
        assert "ran past" not in said, said
        assert repr(column) in said, said
        assert "price" in said, said  # the columns of the table read, the close ones first
    assert "Did you mean 'price'?" in said
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING and "Error calling tool" in r.getMessage()]


async def test_a_missing_placeholder_value_is_named_and_is_no_outage(
    url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """SQLAlchemy's StatementError was answered 'The database call failed' and classed as the upstream's fault."""
    caplog.set_level(logging.INFO)
    results = await _calls(
        url,
        ("run_query", {"sql": "SELECT :a AS a", "params": {}}),
        ("run_query", {"sql": "SELECT id FROM items WHERE id = :wanted", "params": {"other": 1}}),
        ("explain_query", {"sql": "SELECT id FROM items WHERE id = :wanted"}),
    )
    for result, name in zip(results, ["a", "wanted", "wanted"], strict=True):
        said = _text(result)
        assert result.is_error
        assert f":{name}" in said, said
        assert "params" in said
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING and "Error calling tool" in r.getMessage()]


async def test_a_table_resource_that_does_not_exist_is_no_internal_bug(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    async with Client(build_server(DbSettings(schema_poll_s=0))) as client:
        with pytest.raises(Exception, match="not found"):
            await client.read_resource("db://tables/nope")
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], [r.getMessage() for r in caplog.records]


async def test_a_json_value_nested_deeper_than_python_parses_comes_back_as_its_text() -> None:
    """psycopg parses json and jsonb values with Python's parser, whose recursion stops at about 1,000 levels:
    a 1,500-deep array failed the call with an unexplained RecursionError."""
    sql = "SELECT (repeat('[', 1500) || repeat(']', 1500))::jsonb AS deep, '[[1]]'::jsonb AS shallow"
    (result,) = await _calls(PG_ADMIN, ("run_query", {"sql": sql}))
    assert not result.is_error, _text(result)
    deep, shallow = result.structured_content["rows"][0]  # type: ignore[index]
    assert deep.startswith("[[[[")
    assert "[cut: 3,000 chars]" in deep
    assert shallow == "[[1]]"  # as any JSON value renders


async def test_a_statement_past_its_timeout_is_still_a_timeout(url: str) -> None:
    """The engine's own code tells a timeout now, not its words: each backend's stopped statement still says so."""
    slow = {
        "sqlite": "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) SELECT count(*) FROM c",
        "postgresql": "SELECT count(*) FROM generate_series(1, 1000000000) g",
        "mysql": "SELECT COUNT(*) FROM seq_1_to_1000000 a JOIN seq_1_to_1000000 b ON a.seq + b.seq = 3",
    }[url.partition("+")[0].partition(":")[0]]
    settings = DbSettings(url=url, allow_privileged_role=True, schema_poll_s=0, statement_timeout_s=0.3)
    async with Client(build_server(settings)) as client:
        result = await client.call_tool_mcp("run_query", {"sql": slow})
    assert result.is_error
    assert "ran past the 0.3 s timeout" in _text(result)
