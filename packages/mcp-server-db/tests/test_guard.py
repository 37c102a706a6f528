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
