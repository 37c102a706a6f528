from __future__ import annotations

import pytest
from mcp_server_core import InvalidArgument, cut_to_budget, decode_cursor, encode_cursor, take_within_budget, tool
from mcp_server_core.conventions.tools import compact_schema, first_sentence


def test_text_within_budget_is_untouched() -> None:
    assert cut_to_budget("short", 100, "page on") == "short"


def test_text_over_budget_is_cut_at_a_line_and_says_how_to_go_on() -> None:
    text = "\n".join(f"line {i}" for i in range(1000))
    cut = cut_to_budget(text, 200, "pass offset=42")
    kept, note = cut.rsplit("\n", 1)
    assert len(kept.encode()) <= 200
    assert text.startswith(kept)
    assert kept.endswith(tuple("0123456789"))  # ends on a whole line
    assert note.startswith("[cut at ")
    assert f"of {len(text.encode()):,} bytes; pass offset=42]" in note


def test_a_cut_never_splits_a_multibyte_character() -> None:
    cut = cut_to_budget("é" * 500, 101, "more")
    cut.encode()  # would raise on a split surrogate; also no replacement characters
    assert "\ufffd" not in cut


def test_take_within_budget_counts_whole_items_and_always_makes_progress() -> None:
    assert take_within_budget(["aa", "bb", "cc"], len, 5) == 2
    assert take_within_budget(["a" * 100], len, 5) == 1
    assert take_within_budget([], len, 5) == 0
    # A later page of the same answer: what earlier pages used counts, and nothing is forced in.
    assert take_within_budget(["aa", "bb"], len, 5, spent=2) == 1
    assert take_within_budget(["a" * 100], len, 5, spent=1) == 0


def test_a_cursor_round_trips_and_is_opaque() -> None:
    cursor = encode_cursor({"offset": 40}, scope="q")
    assert "offset" not in cursor
    assert decode_cursor(cursor, scope="q") == {"offset": 40}


@pytest.mark.parametrize("garbage", ["", "not-base64!!", "eyJ4IjoxfQ", "W10"])
def test_a_foreign_cursor_is_an_actionable_error(garbage: str) -> None:
    with pytest.raises(InvalidArgument, match="omit cursor"):
        decode_cursor(garbage)


def test_a_cursor_from_another_query_is_refused() -> None:
    with pytest.raises(InvalidArgument, match="different query"):
        decode_cursor(encode_cursor({"offset": 1}, scope="a"), scope="b")


def test_compact_schema_advertises_optional_nulls_as_plain_types() -> None:
    schema = {
        "type": "object",
        "properties": {
            "cursor": {"anyOf": [{"type": "string", "maxLength": 9}, {"type": "null"}], "default": None},
            "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            "required_nullable": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        },
        "additionalProperties": False,
    }
    compact = compact_schema(schema)
    assert compact["properties"]["cursor"] == {"type": "string", "maxLength": 9}
    assert compact["properties"]["either"] == schema["properties"]["either"]
    assert compact["properties"]["required_nullable"] == schema["properties"]["required_nullable"]


def test_compact_schema_leaves_out_what_only_the_server_enforces_or_any_model_infers() -> None:
    schema = {
        "type": "object",
        "properties": {
            "dry_run": {"type": "boolean", "default": False},
            "follow": {"type": "boolean", "default": True},
            "edit": {"type": "object", "properties": {"n": {"type": "integer"}}, "additionalProperties": False},
        },
        "additionalProperties": False,
    }
    compact = compact_schema(schema)
    assert "additionalProperties" not in compact
    assert "additionalProperties" not in compact["properties"]["edit"]
    assert compact["properties"]["dry_run"] == {"type": "boolean"}
    assert compact["properties"]["follow"] == {"type": "boolean", "default": True}
    declared = {**schema, "$schema": "https://json-schema.org/draft/2020-12/schema"}
    assert compact_schema(declared) == declared


def test_compact_schema_drops_the_default_open_object_but_not_a_property_of_that_name() -> None:
    schema = {
        "type": "object",
        "properties": {
            "params": {"type": "object", "additionalProperties": True},
            "additionalProperties": {"type": "boolean"},
        },
    }
    compact = compact_schema(schema)
    assert compact["properties"]["params"] == {"type": "object"}
    assert compact["properties"]["additionalProperties"] == {"type": "boolean"}


@pytest.mark.parametrize("name", ["Read", "read", "readFile", "read-file", "_read_file", "read__file"])
def test_tool_names_must_be_snake_case_verb_noun(name: str) -> None:
    def fn() -> str:
        """Use to read."""
        return ""

    with pytest.raises(ValueError, match="verb_noun"):
        tool(title="T", read_only=True, open_world=False, name=name)(fn)


def test_a_tool_needs_a_docstring() -> None:
    def read_file() -> str:
        return ""

    with pytest.raises(ValueError, match="docstring"):
        tool(title="Read", read_only=True, open_world=False)(read_file)


def test_a_read_only_tool_cannot_claim_to_destroy() -> None:
    with pytest.raises(ValueError, match="destructive"):
        tool(title="Read", read_only=True, open_world=False, destructive=True)


def test_annotations_default_idempotency_from_read_only() -> None:
    def read_file() -> str:
        """Use to read."""
        return ""

    def write_file() -> str:
        """Use to write."""
        return ""

    reading = tool(title="Read", read_only=True, open_world=False)(read_file).annotations
    writing = tool(title="Write", read_only=False, open_world=True)(write_file).annotations
    assert (reading.idempotent_hint, reading.destructive_hint) == (True, False)
    assert (writing.idempotent_hint, writing.open_world_hint) == (False, True)


async def test_a_note_opens_the_answer_once_on_both_tracks(capsys: pytest.CaptureFixture[str]) -> None:
    from fastmcp import Client
    from mcp_server_core import ReferenceServer, Toolset, note_in_answer
    from mcp_server_core.tracks.commands import ToolCommands

    toolset = Toolset("moves", "A tool that follows a rename")

    @toolset.tool(title="Read moved", read_only=True, open_world=False)
    def read_moved() -> str:
        """Use to read what moved."""
        note_in_answer("(a has moved to b)")
        note_in_answer("(a has moved to b)")  # a second redirect of the same call: said once
        return "the body"

    commands = ToolCommands("mcp-server-x", "X.", [toolset], skill="Use it.", enabled=None, read_only=False)
    assert commands.main(["call", "read_moved"]) == 0
    assert capsys.readouterr().out == "(a has moved to b)\nthe body\n"
    async with Client(ReferenceServer("x", version="0", toolsets=[toolset])) as client:
        answers = [await client.call_tool("read_moved", {}) for _ in range(2)]
    # Each call collects its own notes: the second answer does not carry the first one's.
    assert [a.content[0].text for a in answers] == ["(a has moved to b)\nthe body"] * 2  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("description", "first"),
    [
        ("Find code, e.g. def foo in *.py. Results come paged.", "Find code, e.g. def foo in *.py."),
        ("Read one file (i.e. not a folder). Binary comes as media.", "Read one file (i.e. not a folder)."),
        ("Compare a branch vs. its base. Shows commits.", "Compare a branch vs. its base."),
        ("Post a message! Only to allowed channels.", "Post a message!"),
        ("One sentence only", "One sentence only"),
    ],
)
def test_the_first_sentence_is_not_cut_at_an_abbreviation(description: str, first: str) -> None:
    # The Skill and the `tools` listing show only this sentence: "e.g." must not end it.
    assert first_sentence(description) == first
