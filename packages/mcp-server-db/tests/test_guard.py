"""The parser layer remembers accepted statements only: a refusal is decided afresh every time."""

from __future__ import annotations

import pytest
from mcp_server_core import Refused
from mcp_server_db import guard


def test_an_accepted_statement_is_parsed_once_and_a_refused_one_every_time(monkeypatch: pytest.MonkeyPatch) -> None:
    guard._accepted.cache_clear()
    parsed: list[str] = []
    real = guard.sqlglot.parse

    def counting(sql: str, **options: object) -> object:
        parsed.append(sql)
        return real(sql, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(guard.sqlglot, "parse", counting)
    for _ in range(3):
        verdict = guard.check_read_only("SELECT 1 AS one", "sqlite")
        assert (verdict.statement, verdict.explain, verdict.calls) == ("SELECT 1 AS one", False, frozenset())
        with pytest.raises(Refused):
            guard.check_read_only("SELECT 1; DROP TABLE t", "sqlite")
    assert parsed.count("SELECT 1 AS one") == 1
    assert parsed.count("SELECT 1; DROP TABLE t") == 3


def test_the_verdict_is_per_dialect_and_long_statements_are_not_kept() -> None:
    guard._accepted.cache_clear()
    guard.check_read_only("SELECT 1", "sqlite")
    guard.check_read_only("SELECT 1", "postgresql")
    long = "SELECT " + " + ".join(["1"] * 5_000)
    guard.check_read_only(long, "sqlite")
    assert guard._accepted.cache_info().currsize == 2


def test_the_plan_reader_finds_every_call_outside_literals_and_refuses_what_it_cannot_read() -> None:
    """EXPLAIN VERBOSE writes calls as SQL: a name inside a literal is text, one inside a quoted alias's neighbour
    is still a call, and keywords (COALESCE) are syntax; a plan that is not a plan refuses the statement."""
    from mcp_server_db.plan import plan_facts

    node = {
        "Node Type": "Seq Scan",
        "Schema": "public",
        "Relation Name": "t",
        "Output": [
            "COALESCE(\"x'\"(t.a), 'pg_sleep(1)'), pg_catalog.upper((t.b)::text)",
            "\"Lower\"(t.c), E'\\\\'f(' , g (1)",
        ],
        "Plans": [{"Node Type": "Result", "Output": ["pg_terminate_backend(4)"]}],
    }
    facts = plan_facts([{"Plan": node}])
    assert facts.relations == {("public", "t")}
    assert facts.functions == {
        ("", "x'"), ("pg_catalog", "upper"), ("", "Lower"), ("", "f"), ("", "g"), ("", "pg_terminate_backend")
    }  # fmt: skip
    for broken in [None, [{"Plan": "x"}], [{"nothing": 1}]]:
        with pytest.raises(Refused, match="could not be read"):
            plan_facts(broken)
    with pytest.raises(Refused, match="Foreign Scan"):
        plan_facts([{"Plan": {"Node Type": "Append", "Plans": [{"Node Type": "Foreign Scan"}]}}])
