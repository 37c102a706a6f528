"""Ranged reads agree with slicing the file's lines, across chunk boundaries, heads, tails and budgets."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp_server_filesystem import reading
from mcp_server_filesystem.sandbox import Sandbox

line = st.text(alphabet=st.sampled_from("ab é\t"), max_size=12)


@pytest.fixture(autouse=True)
def tiny_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reading, "CHUNK", 7)  # every boundary case of the chunked scans, in small files


@settings(max_examples=300, deadline=None, database=None)
@given(
    lines=st.lists(line, max_size=40),
    trailing_newline=st.booleans(),
    offset=st.integers(-45, 45).filter(lambda n: n != 0),
    limit=st.one_of(st.none(), st.integers(1, 50)),
)
def test_read_text_matches_slicing_the_lines(
    lines: list[str], trailing_newline: bool, offset: int, limit: int | None
) -> None:
    content = "\n".join(lines) + ("\n" if trailing_newline and lines else "")
    expected_lines = content.splitlines(keepends=True)
    total = len(expected_lines)
    start = max(total + offset + 1, 1) if offset < 0 else offset
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "f.txt").write_text(content, encoding="utf-8")
        box = Sandbox([str(Path(folder).resolve())])
        if total and start > total:
            with pytest.raises(reading.InvalidArgument):
                reading.read_text(box, box.locate("f.txt"), offset=offset, limit=limit, max_bytes=10_000)
            return
        piece = reading.read_text(box, box.locate("f.txt"), offset=offset, limit=limit, max_bytes=10_000)
    wanted = expected_lines[start - 1 : start - 1 + (limit if limit is not None else total)]
    assert piece.text == "".join(wanted)
    assert piece.total == total
    assert not piece.cut
    if wanted:
        assert (piece.first, piece.last) == (start, start + len(wanted) - 1)


@settings(max_examples=100, deadline=None, database=None)
@given(lines=st.lists(line, min_size=1, max_size=40), budget=st.integers(1, 80))
def test_a_budget_keeps_whole_lines_and_never_exceeds_it(lines: list[str], budget: int) -> None:
    content = "\n".join(lines) + "\n"
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "f.txt").write_text(content, encoding="utf-8")
        box = Sandbox([str(Path(folder).resolve())])
        piece = reading.read_text(box, box.locate("f.txt"), offset=1, limit=None, max_bytes=budget)
    assert len(piece.text.encode()) <= budget
    if piece.cut and piece.last > piece.first:
        assert piece.text == "".join(content.splitlines(keepends=True)[: piece.last])
    if not piece.cut:
        assert piece.text == content
