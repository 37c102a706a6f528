"""Patterns from outside the server: matched in linear time, or refused saying why."""

from __future__ import annotations

import threading

import pytest
from mcp_server_core import InvalidArgument
from mcp_server_core.conventions.patterns import compile_linear


def _finishes_within(seconds: float, work: object) -> bool:
    done = threading.Event()
    thread = threading.Thread(target=lambda: (work(), done.set()), daemon=True)  # type: ignore[operator]
    thread.start()
    return done.wait(seconds)


@pytest.mark.parametrize(
    ("pattern", "text"),
    [
        (r"(\w+\s?)*zzz", ("abcdefgh " * 8 + "!\n") * 2000),
        (r"(a+)+$", "a" * 34 + "!"),
        (r"^(?:[^/]*a){12}[^/]*b$", "a" * 60),  # the glob *a*a*a*a*a*a*a*a*a*a*a*a*b, translated
    ],
)
def test_a_catastrophic_pattern_for_a_backtracking_engine_answers_at_once(pattern: str, text: str) -> None:
    # A generous bound: it tells an answer from a hang (Python's re takes minutes on each), not a speed.
    compiled = compile_linear(pattern, multiline=True)
    assert _finishes_within(10, lambda: compiled.search(text))
    assert compiled.search(text) is None


def test_bytes_patterns_search_from_a_position_with_the_flags() -> None:
    compiled = compile_linear(b"^AB", ignore_case=True, multiline=True)
    found = compiled.search(b"zz\nabc", 1)
    assert (found.start(), found.end()) == (3, 5)
    assert compiled.search(b"zz\nabc", 4) is None


@pytest.mark.parametrize(
    ("pattern", "words"),
    [("(?<=a)b", "look-around"), (r"(a)\1", "backreference"), ("(?>a)", "atomic group"), ("a++", "possessive")],
)
def test_what_needs_backtracking_is_refused_saying_so(pattern: str, words: str) -> None:
    with pytest.raises(InvalidArgument, match=words) as refused:
        compile_linear(pattern)
    assert "linear" in str(refused.value)


def test_a_broken_or_huge_pattern_is_refused_with_rre2s_reason() -> None:
    with pytest.raises(InvalidArgument, match="does not compile: missing"):
        compile_linear("(a")
    with pytest.raises(InvalidArgument, match="at most 4,000"):
        compile_linear("a" * 5000)
