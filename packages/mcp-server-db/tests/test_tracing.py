"""Each statement the db server sends is a child span of its call, named by dialect and statement kind, with no
SQL text or value in it (issue 18); on real SQLite and PostgreSQL, through the MCP protocol."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastmcp import Client
from mcp_server_core.testing import recorded_spans
from mcp_server_db.database import statement_kind
from mcp_server_db.server import build_server
from mcp_server_db.settings import DbSettings
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

PG_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
MY_URL = "mysql+pymysql://root@127.0.0.1:3306/test"


@pytest.fixture(scope="module")
def spans() -> Iterator[InMemorySpanExporter]:
    with recorded_spans() as exporter:
        yield exporter


async def _call(spans: InMemorySpanExporter, settings: DbSettings, tool: str, arguments: dict[str, Any]) -> None:
    async with Client(build_server(settings)) as client:
        await client.list_resources()  # waits for the first schema read, which is no call's
        spans.clear()
        result = await client.call_tool_mcp(tool, arguments)
        assert not result.is_error, result.content


def _upstream(spans: InMemorySpanExporter, system: str, *hidden: str) -> list[ReadableSpan]:
    """The statement spans, each checked: a client span under the tools/call span, carrying no hidden word."""
    finished = spans.get_finished_spans()
    by_id = {s.context.span_id: s for s in finished}
    upstream = [s for s in finished if (s.attributes or {}).get("mcp.upstream") == system]
    for span in upstream:
        assert span.kind == SpanKind.CLIENT
        assert span.parent is not None
        assert (by_id[span.parent.span_id].attributes or {}).get("gen_ai.tool.name"), "a child of the tool call"
        assert (span.attributes or {}).get("db.system") == system
        carried = " ".join([span.name, *(f"{k}={v}" for k, v in (span.attributes or {}).items())]).lower()
        for word in hidden:
            assert word.lower() not in carried, (word, span.name)
    return upstream


async def test_sqlite_statements_are_child_spans_without_text_or_values(spans: InMemorySpanExporter) -> None:
    hidden = ("customers", "email", "zz-secret-zz", "LIKE")
    sql = "SELECT name FROM customers WHERE email LIKE :pattern"
    await _call(spans, DbSettings(schema_poll_s=0), "run_query", {"sql": sql, "params": {"pattern": "%zz-secret-zz%"}})
    names = [s.name for s in _upstream(spans, "sqlite", *hidden)]
    assert names[0] == "sqlite SELECT"
    assert names[1:] == ["sqlite FETCH"], "one span for all the reads of a stream, not one per batch"

    await _call(spans, DbSettings(schema_poll_s=0), "describe_tables", {"tables": ["customers"], "sample_rows": 1})
    names = [s.name for s in _upstream(spans, "sqlite", "customers", "email")]
    assert names
    assert set(names) == {"sqlite describe"}, "catalog reads, the sample rows too, are named as such"


async def test_postgres_statements_are_child_spans_without_text_or_values(spans: InMemorySpanExporter) -> None:
    settings = DbSettings(url=PG_URL, allow_privileged_role=True, schema_poll_s=0)
    sql = "SELECT g AS hidden_column FROM generate_series(1, 9000) AS g WHERE g > :floor"
    await _call(spans, settings, "run_query", {"sql": sql + " LIMIT 3", "params": {"floor": 8173}})
    upstream = _upstream(spans, "postgresql", "hidden_column", "generate_series", "8173")
    names = [s.name for s in upstream]
    assert "postgresql SELECT" in names
    assert "postgresql FETCH" in names
    # The pool's session statements (its settings at checkout, DISCARD ALL at return) are spans of the call too.
    assert {"postgresql SET", "postgresql RESET"} <= set(names)
    # describe: the catalog read that no function of the database's own shadows a built-in the query calls.
    assert "postgresql describe" in names
    assert set(names) <= {
        "postgresql SELECT", "postgresql FETCH", "postgresql SET", "postgresql RESET", "postgresql describe"
    }  # fmt: skip

    await _call(spans, settings, "run_query", {"sql": "EXPLAIN SELECT * FROM pg_class WHERE relname = 'zz-secret'"})
    names = [s.name for s in _upstream(spans, "postgresql", "pg_class", "relname", "zz-secret")]
    assert "postgresql EXPLAIN" in names


async def test_mariadb_statements_are_named_mysql(spans: InMemorySpanExporter) -> None:
    settings = DbSettings(url=MY_URL, allow_privileged_role=True, schema_poll_s=0)
    sql = "SELECT 'zz-secret' AS hidden_column FROM DUAL WHERE 1 < :floor"
    await _call(spans, settings, "run_query", {"sql": sql, "params": {"floor": 8173}})
    names = {s.name for s in _upstream(spans, "mysql", "zz-secret", "hidden_column", "dual", "8173")}
    # SET: the session settings at checkout and the row cap (sql_select_limit); RESET: COM_RESET_CONNECTION.
    assert names == {"mysql SET", "mysql SELECT", "mysql FETCH", "mysql RESET"}


async def test_a_failed_statement_marks_its_span_with_the_error_type_only(spans: InMemorySpanExporter) -> None:
    settings = DbSettings(url=PG_URL, allow_privileged_role=True, schema_poll_s=0)
    async with Client(build_server(settings)) as client:
        await client.list_resources()  # waits for the first schema read, which is no call's
        spans.clear()
        result = await client.call_tool_mcp("run_query", {"sql": "SELECT no_such_column_zz FROM pg_class"})
    assert result.is_error
    (failed,) = [s for s in _upstream(spans, "postgresql", "no_such_column_zz") if s.name == "postgresql SELECT"]
    assert not failed.status.is_ok
    assert "no_such_column_zz" not in (failed.status.description or "")


@pytest.mark.parametrize(
    ("sql", "kind"),
    [
        ("select 1", "SELECT"),
        ("  /* SELECT */ -- note\n explain select 1", "EXPLAIN"),
        ("(SELECT 1) UNION (SELECT 2)", "SELECT"),
        ("WITH x AS (SELECT 1 AS delete_me) SELECT * FROM x", "SELECT"),
        ("WITH x AS (SELECT 1) INSERT INTO t SELECT * FROM x", "INSERT"),
        ('WITH "select" AS (SELECT 1) DELETE FROM t', "DELETE"),
        ("secret_word_here", "statement"),
        ("", "statement"),
    ],
)
def test_statement_kind_is_a_keyword_from_a_fixed_list(sql: str, kind: str) -> None:
    assert statement_kind(sql) == kind


async def test_a_statement_span_never_becomes_the_current_one(spans: InMemorySpanExporter) -> None:
    """A statement's span starts in one SQLAlchemy event and ends in another, which may run in another context or
    never come (a reflection that failed half-way): made current, it was detached out of turn ("Failed to detach
    context") and left later spans parented under it. While a statement runs, the current span is the call's."""
    from opentelemetry import trace
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    current: list[str] = []

    def heard(*_args: Any) -> None:  # between the server's start of the span and its end
        span = trace.get_current_span()
        current.append(getattr(span, "name", "") or "")

    # After the statement, before the server's own listener ends its span (a class's listeners run before an
    # engine's, and the server's engine is made at its first connection).
    event.listen(Engine, "after_cursor_execute", heard)
    try:
        await _call(spans, DbSettings(schema_poll_s=0), "run_query", {"sql": "SELECT count(*) FROM customers"})
    finally:
        event.remove(Engine, "after_cursor_execute", heard)
    assert current, "no statement ran"
    assert not [name for name in current if name.startswith("sqlite ")], current
    assert _upstream(spans, "sqlite"), "the statements still have their spans, under the tool call"
