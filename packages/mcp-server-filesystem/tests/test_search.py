"""Streaming a big file finds exactly what scanning it whole finds, page by page."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp_server_filesystem import search
from mcp_server_filesystem.sandbox import Sandbox
from mcp_server_filesystem.search import compile_query, search_files
from mcp_server_filesystem.walk import WalkOptions


def _pages(root: Path, query: str, limit: int) -> list[tuple[str, int, str]]:
    box = Sandbox([str(root.resolve())])
    pattern = compile_query(query, regex=True, ignore_case=False)
    found: list[tuple[str, int, str]] = []
    resume = None
    while True:
        outcome = search_files(
            box,
            box.locate("."),
            pattern=pattern,
            context=0,
            glob=None,
            options=WalkOptions(),
            limit=limit,
            resume=resume,
        )
        found += [(h.path, h.line, h.text) for h in outcome.hits]
        if outcome.resume is None:
            return found
        resume = outcome.resume


@pytest.mark.parametrize("limit", [1, 3, 1000])
def test_streamed_pieces_find_the_same_lines_as_one_buffer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: int
) -> None:
    lines = [f"row {n} {'hit' if n % 7 == 0 else 'miss'} {'x' * (n % 13)}" for n in range(1, 400)]
    (tmp_path / "big.txt").write_text("\n".join(lines))  # no newline at the end, on purpose
    (tmp_path / "small.txt").write_text("a hit\n")
    whole = _pages(tmp_path, r"\bhit\b", limit)
    monkeypatch.setattr(search, "WHOLE_FILE_BYTES", 0)
    monkeypatch.setattr(search, "STREAM_BYTES", 37)  # pieces shorter than some lines: the carry path
    streamed = _pages(tmp_path, r"\bhit\b", limit)
    assert streamed == whole
    assert len(whole) == 1 + len([n for n in range(1, 400) if n % 7 == 0])
    assert whole[0] == ("big.txt", 7, "row 7 hit " + "x" * 7)
