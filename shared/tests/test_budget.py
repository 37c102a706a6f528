"""One budget per answer: text and structured content together, whatever the tool's content holds."""

from __future__ import annotations

from typing import Any

import pytest
from fastmcp import Client
from mcp_server_core import ReferenceServer, Rendered, Toolset
from mcp_server_core.conventions.budget import CUT_MARK, fit_structure, json_size
from mcp_server_core.conventions.tools import answer_of, collecting_notes, note_at_end


class Hits(Rendered):
    hits: list[str]
    next_cursor: str | None = None

    def render(self) -> str:
        return "\n".join(self.hits) + (f"\nnext_cursor={self.next_cursor}" if self.next_cursor else "")


def test_a_list_is_trimmed_item_by_item_and_small_members_survive() -> None:
    value = {"hits": [f"path/{i}:{'x' * 90}" for i in range(2000)], "next_cursor": "abc", "matches": 2000}
    fitted = fit_structure(value, 10_000)
    assert json_size(fitted) <= 10_000
    assert fitted["next_cursor"] == "abc"
    assert fitted["matches"] == 2000
    assert fitted["hits"] == value["hits"][: len(fitted["hits"])]
    assert len(fitted["hits"]) > 50


def test_one_huge_value_is_cut_with_a_marker() -> None:
    fitted = fit_structure({"content": "y" * 5_000_000, "path": "a.txt"}, 16_000)
    assert json_size(fitted) <= 16_000
    assert fitted["content"].endswith(CUT_MARK)
    assert fitted["path"] == "a.txt"


def test_the_whole_answer_fits_twice_the_text_budget_with_escapes_counted() -> None:
    control = "\x01" * 50
    hits = [f"{control}:{i}" for i in range(5000)]  # each control character is six bytes of JSON
    with collecting_notes() as notes:
        note_at_end("continue with cursor=XYZ")
        answer = answer_of(Hits(hits=hits, next_cursor="XYZ"), 4_000, "narrow it", notes)
    assert json_size(answer.text) <= 4_000
    assert answer.structured is not None
    assert json_size(answer.text) + json_size(answer.structured) <= 8_000
    assert answer.text.endswith("\ncontinue with cursor=XYZ")
    assert "[cut at" in answer.text
    assert answer.structured["next_cursor"] == "XYZ"


def _server(result: Any) -> ReferenceServer:
    toolset = Toolset("demo", "Demo.")

    @toolset.tool(title="Big", read_only=True, open_world=False, budget=2_000)
    def get_big() -> Hits:
        """Use to get a big answer."""
        return result  # type: ignore[no-any-return]

    return ReferenceServer("demo", version="1.0", toolsets=[toolset])


@pytest.mark.parametrize("count", [1, 1_000])
async def test_no_answer_on_the_wire_exceeds_the_budget(count: int) -> None:
    big = Hits(hits=["z" * 10_000] * count, next_cursor="C")
    async with Client(_server(big)) as client:
        result = await client.call_tool("get_big", {})
    text = result.content[0].text  # type: ignore[union-attr]
    assert json_size(text) + json_size(result.structured_content) <= 4_000
    assert result.structured_content["next_cursor"] == "C"  # type: ignore[index]
