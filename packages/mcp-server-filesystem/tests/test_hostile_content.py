"""Hostile content: a tree an attacker planted (names, bodies, a huge line, catastrophic patterns) cannot stall the
server, overflow an answer, or speak in the server's voice, through any tool.

Every tool of tools/list (write tools on) is called over the planted tree with the kit's three checks; a tool
without a case fails the suite. Then the issue's reproductions, the pattern ones over the real stdio wire.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from mcp_server_core.conventions.budget import CUT_MARK
from mcp_server_core.conventions.untrusted import one_line
from mcp_server_core.testing import StdioWire, python_module
from mcp_server_core.testing.hostile import (
    CATASTROPHIC_GLOBS,
    CATASTROPHIC_REGEXES,
    CATASTROPHIC_RULES,
    FORGED,
    HOSTILE_BODIES,
    HOSTILE_NAMES,
    assert_failure_holds,
    assert_fenced,
    assert_ping_answered_during,
    assert_structure_one_line,
    assert_within_budget,
)
from mcp_server_filesystem.sandbox import Sandbox
from mcp_server_filesystem.tools import Workspace, files_toolset

FIXTURES = [*HOSTILE_NAMES.values(), *HOSTILE_BODIES.values()]
BYTE_NAME = os.fsdecode(b"bad\xffname")  # a name that is not UTF-8
ASCII_NAME = "bad\\xffname"  # an ASCII name spelled like the other's escape
WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu"  # ~70 word characters a line


def plant(root: Path) -> Path:
    """The attacker's tree: every hostile name as a file and as a directory, every body as a file, a huge line,
    lines that make backtracking regexes explode, and a .gitignore whose glob does the same to a matcher."""
    root.mkdir()
    (root / "dirs").mkdir()
    for key, name in HOSTILE_NAMES.items():
        (root / name).write_text(f"MATCH in the file named {key}\n")
        (root / "dirs" / name).mkdir()
        (root / "dirs" / name / "inner.txt").write_text(f"MATCH inside the directory named {key}\n")
    (root / "bodies").mkdir()
    for key, body in HOSTILE_BODIES.items():
        (root / "bodies" / f"{key}.txt").write_text(body)
    (root / "bodies" / "controls.txt").write_text("keep\nx\x1b[2J\u202ey\n")
    (root / "lines.txt").write_text("".join(f"{WORDS} {n}\n" for n in range(200)) + "a" * 34 + "!\n")
    (root / ".gitignore").write_text("\n".join(CATASTROPHIC_GLOBS) + "\n")
    (root / ("a" * 60)).write_text("MATCH beside the glob\n")
    (root / BYTE_NAME).write_text("the byte name\n")
    (root / ASCII_NAME).write_text("the ascii name\n")
    (root / "back\\note.txt").write_text("typed\n")
    return root


def _shown(name: str) -> str:
    return one_line(name, 100_000)


# Arguments per tool: each call must pass the three checks; `ok` says whether it should succeed (so a case cannot
# pass by failing before it reaches the hostile part).
NAMES = list(HOSTILE_NAMES.values())
CASES: dict[str, list[tuple[dict[str, Any], bool]]] = {
    "read_file": [
        *[({"path": name}, True) for name in NAMES],
        *[({"path": f"bodies/{key}.txt"}, True) for key in HOSTILE_BODIES],
        ({"path": [*NAMES, *(f"bodies/{key}.txt" for key in HOSTILE_BODIES)]}, True),
        ({"path": f"missing {HOSTILE_NAMES['newline']}"}, False),
        ({"path": HOSTILE_NAMES["hit"] + "x"}, False),  # a near name: the did-you-mean hint names it
        ({"path": "bodies/long_line.txt", "max_bytes": 200_000}, True),
    ],
    "write_file": [
        ({"path": f"dirs/{HOSTILE_NAMES['newline']}/new.txt", "content": HOSTILE_BODIES["backticks"]}, True),
        ({"path": f"new {HOSTILE_NAMES['fence']}", "content": FORGED}, True),
    ],
    "edit_file": [
        ({"path": HOSTILE_NAMES["escape"], "edits": [{"old_text": "MATCH", "new_text": "HIT"}]}, True),
        ({"path": HOSTILE_NAMES["bidi"], "edits": [{"old_text": "MATCH", "new_text": "HIT"}], "dry_run": True}, True),
        (
            {
                "path": "bodies/backticks.txt",
                "edits": [{"old_text": "IMPORTANT NOTE FROM the server!", "new_text": "x"}],
            },
            False,
        ),
        ({"path": "bodies/comment.txt", "edits": [{"old_text": "visible", "new_text": "seen"}]}, True),
        ({"path": "bodies/controls.txt", "edits": [{"old_text": "x\x1b[2J\u202ey", "new_text": "z"}]}, True),
    ],
    "create_directory": [({"path": f"made {name}"}, True) for name in NAMES[:4]],
    "move_path": [
        ({"source": HOSTILE_NAMES["carriage"], "destination": f"moved {HOSTILE_NAMES['separator']}"}, True),
        (
            {
                "source": f"dirs/{HOSTILE_NAMES['listing']}",
                "destination": f"copied {HOSTILE_NAMES['hit']}",
                "copy": True,
            },
            True,
        ),
        ({"source": HOSTILE_NAMES["invisible"], "destination": HOSTILE_NAMES["standing"]}, False),
    ],
    "delete_path": [
        ({"path": HOSTILE_NAMES["newline"]}, True),
        ({"path": f"dirs/{HOSTILE_NAMES['fence']}"}, False),  # not empty: the message names it
        ({"path": f"dirs/{HOSTILE_NAMES['fence']}", "recursive": True}, True),
    ],
    "list_directory": [
        ({}, True),
        ({"path": "dirs"}, True),
        ({"path": "bodies", "sort": "size"}, True),
        ({"path": HOSTILE_NAMES["hit"]}, True),  # a file: its stat
        ({"path": "dirs", "limit": 2}, True),
    ],
    "show_tree": [({}, True), ({"path": "dirs", "everything": True}, True), ({"limit": 5}, True)],
    "find_files": [
        ({"pattern": "*"}, True),
        ({"pattern": "*", "everything": True}, True),
        *[({"pattern": glob}, True) for glob in CATASTROPHIC_GLOBS],
        *[({"pattern": glob, "everything": True}, True) for glob in CATASTROPHIC_GLOBS],
    ],
    "search_text": [
        ({"query": "MATCH"}, True),
        ({"query": "MATCH", "context": 10, "limit": 1000, "everything": True}, True),
        ({"query": "IMPORTANT NOTE"}, True),
        ({"query": "x", "path": "bodies/long_line.txt"}, True),
        ({"query": "\\x1b|\\x{202e}|\\r", "regex": True}, True),
        *[({"query": regex, "regex": True}, True) for regex in CATASTROPHIC_REGEXES],
        *[({"query": "MATCH", "glob": glob, "everything": True}, True) for glob in CATASTROPHIC_GLOBS],
        ({"query": "\udcff", "regex": True}, False),  # lone surrogates, as JSON can spell them: refused, said why
        ({"query": "\ud800"}, False),
    ],
}


def _budgets(root: Path) -> dict[str, int]:
    return {tool.name: tool.budget for tool in files_toolset(Workspace(Sandbox([str(root)]))).tools}


def _text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    return plant(tmp_path / "planted")


async def test_every_tool_has_a_hostile_case(hostile: Path, make_server: Any) -> None:
    async with Client(make_server(hostile)) as client:
        listed = {tool.name for tool in await client.list_tools()}
    assert listed == set(CASES), f"tools without a hostile case: {listed - set(CASES)}; stale: {set(CASES) - listed}"


@pytest.mark.parametrize("tool", sorted(CASES))
async def test_every_tool_over_hostile_content_is_bounded_fenced_and_responsive(
    tool: str, hostile: Path, make_server: Any
) -> None:
    budget = _budgets(hostile)[tool]
    # A handshake-era client: ping is a method of that era.
    async with Client(make_server(hostile), mode="legacy") as client:
        for arguments, ok in CASES[tool]:
            result = await assert_ping_answered_during(client, client.call_tool_mcp(tool, arguments))
            text = _text(result)
            where = f"{tool} {json.dumps(arguments)[:200]}: {text[:300]!r}"
            assert bool(result.is_error) is not ok, where
            if not ok:  # a failure quotes the hostile name it could not use: one bounded line
                assert_failure_holds(result, FIXTURES)
            assert_within_budget(result, budget)
            assert_fenced(text, FIXTURES)
            assert_structure_one_line(result.structured_content)


async def test_names_that_look_alike_display_apart_and_each_is_acted_on_as_named(
    hostile: Path, make_server: Any, call: Any
) -> None:
    byte_shown, ascii_shown = _shown(BYTE_NAME), _shown(ASCII_NAME)
    assert byte_shown != ascii_shown
    async with Client(make_server(hostile)) as client:
        _, listing = await call(client, "list_directory")
        lines = listing.split("\n")
        assert any(line.startswith(byte_shown + "\t") for line in lines), listing
        assert any(line.startswith(ascii_shown + "\t") for line in lines), listing
        for shown, body in ((byte_shown, "the byte name"), (ascii_shown, "the ascii name")):
            failed, text = await call(client, "read_file", path=shown)
            assert not failed, text
            assert body in text
        # A plain path as a user types it still names the file it spells when no other reading exists: `\n` in
        # `back\note.txt` would read as a newline, but only the name with a backslash exists.
        failed, text = await call(client, "read_file", path="back\\note.txt")
        assert not failed, text
        assert "```text\ntyped\n```" in text
        failed, text = await call(client, "delete_path", path=byte_shown)
        assert not failed, text
    names = os.listdir(os.fsencode(hostile))
    assert b"bad\xffname" not in names
    assert ASCII_NAME.encode() in names  # the other one is untouched


async def test_every_hostile_name_is_listed_in_its_one_line_form_and_named_back(
    hostile: Path, make_server: Any, call: Any
) -> None:
    async with Client(make_server(hostile)) as client:
        result = await client.call_tool_mcp("list_directory", {"path": "dirs"})
        names = [entry["name"] for entry in result.structured_content["entries"]]
        assert sorted(names) == sorted(_shown(name) for name in HOSTILE_NAMES.values())
        for name in HOSTILE_NAMES.values():
            failed, text = await call(client, "read_file", path=f"dirs/{_shown(name)}/inner.txt")
            assert not failed, text
            assert "MATCH inside" in text
            assert _shown(f"dirs/{name}/inner.txt") in text  # the fence's label names the file, one line


def _long_path_tree(root: Path) -> tuple[Path, int]:
    """Files deep under a path of ~1,000 characters, every line a match: what made the issue's 85 MB answer."""
    deep = root
    for level in range(5):
        deep = deep / (f"level{level}-" + "d" * 200)
    deep.mkdir(parents=True)
    matches = 0
    for number in range(3):
        (deep / f"f{number}.txt").write_text("".join(f"MATCH {number} {line} {'x' * 40}\n" for line in range(40)))
        matches += 40
    (deep / "sparse.txt").write_text(
        "".join(f"MATCH in {line}\n" if line % 15 == 0 else "other\n" for line in range(90))
    )
    return deep, matches + 6


async def test_search_pages_so_text_and_structure_fit_and_agree(tmp_path: Path, make_server: Any) -> None:
    root = tmp_path / "long"
    root.mkdir()
    _, total = _long_path_tree(root)
    budget = _budgets(root)["search_text"]
    seen: list[str] = []
    context: list[str] = []
    arguments: dict[str, Any] = {"query": "MATCH", "context": 10, "limit": 1000}
    async with Client(make_server(root)) as client:
        for _ in range(200):
            result = await client.call_tool_mcp("search_text", arguments)
            assert not result.is_error, _text(result)
            assert_within_budget(result, budget)
            text, structure = _text(result), result.structured_content
            # The tool paged, so nothing was cut behind its back: the text shows every hit the structure holds.
            assert "[cut at" not in text, text[-300:]
            assert CUT_MARK not in json.dumps(structure)
            for hit in structure["hits"]:
                parsed = re.match(r"(?s)^(.*)([:-])(\d+)\2(.*)$", hit)
                assert parsed is not None, hit
                assert f"{parsed[3]}{parsed[2]} {parsed[4]}" in text
            seen += [hit for hit in structure["hits"] if ":MATCH" in hit]
            context += [hit for hit in structure["hits"] if hit.endswith("-other")]
            cursor = structure.get("next_cursor")
            if cursor is None:
                break
            assert f"next_cursor={cursor}" in text
            arguments = {**arguments, "cursor": cursor}
    assert len(seen) == total == len(set(seen))
    assert context  # a match whose ten lines either side are over a page keeps those nearest to it


async def test_read_file_default_fits_its_budget_and_keeps_its_continuation(
    tmp_path: Path, make_server: Any, call: Any
) -> None:
    root = tmp_path / "reads"
    root.mkdir()
    # Quotes, backslashes and tabs cost two bytes each in JSON: the budget is what the wire carries.
    lines = [f'{n}\t"quoted" \\ back\\slash "x"\n' for n in range(6_000)]
    (root / "big.txt").write_text("".join(lines))
    budget = _budgets(root)["read_file"]
    async with Client(make_server(root)) as client:
        got: list[str] = []
        offset = 1
        for _ in range(100):
            result = await client.call_tool_mcp("read_file", {"path": "big.txt", "offset": offset})
            text = _text(result)
            assert_within_budget(result, budget)
            assert "[cut at" not in text, text[-300:]
            body = text.split("```text\n", 1)[1].rsplit("\n```", 1)[0]
            got += [line + "\n" for line in body.split("\n")]
            if "continue with offset=" not in text:
                break
            offset = int(text.rsplit("continue with offset=", 1)[1].split("]")[0])
            assert offset == len(got) + 1
        assert got == lines
        _, default = await call(client, "read_file", path="big.txt")
        _, larger = await call(client, "read_file", path="big.txt", max_bytes=60_000)
        assert len(larger) > len(default) > 16_000  # max_bytes above the old budget is honoured


# --- the reproductions over the real stdio wire ---------------------------------------------------------------


def _pattern_tree(root: Path) -> Path:
    root.mkdir()
    (root / "lines.txt").write_text("".join(f"{WORDS} {n}\n" for n in range(50)) + "a" * 34 + "!\n")
    (root / ("a" * 60)).write_text("")
    return root


PATTERN_ATTACKS = [
    *[("search_text", {"query": regex, "regex": True}) for regex in CATASTROPHIC_REGEXES],
    *[("find_files", {"pattern": glob}) for glob in CATASTROPHIC_GLOBS],
    *[("search_text", {"query": "MATCH", "glob": glob}) for glob in CATASTROPHIC_GLOBS],
]


def test_catastrophic_patterns_answer_with_ping_answered_over_stdio(tmp_path: Path) -> None:
    served = _pattern_tree(tmp_path / "served")
    argv = python_module("mcp_server_filesystem", str(served), "--no-watch", "--call-timeout-s", "10")
    with StdioWire(argv) as wire:
        wire.initialize(timeout=60)
        for number, (tool, arguments) in enumerate(PATTERN_ATTACKS):
            call = {"name": tool, "arguments": arguments}
            wire.send({"jsonrpc": "2.0", "id": f"call-{number}", "method": "tools/call", "params": call})
            wire.send({"jsonrpc": "2.0", "id": f"ping-{number}", "method": "ping"})
            # Within the call's deadline and then some (a loaded machine may take seconds over a first call's
            # imports): a backtracking engine held the GIL for minutes here, so neither ping nor deadline was served.
            assert "result" in wire.response_to(f"ping-{number}", timeout=15), tool
            answer = wire.response_to(f"call-{number}", timeout=15)
            assert answer["result"].get("isError") is not True, answer


def test_a_planted_gitignore_cannot_stop_the_server_from_initializing(tmp_path: Path) -> None:
    served = tmp_path / "repo"
    served.mkdir()
    (served / ".gitignore").write_text("\n".join(CATASTROPHIC_GLOBS) + "\n")
    (served / ("a" * 60)).write_text("")
    (served / "kept.txt").write_text("")
    with StdioWire(python_module("mcp_server_filesystem", str(served), "--no-watch")) as wire:
        # A ping before the handshake says the process is up (a loaded machine may take seconds to import);
        # from there the handshake, whose answer waited on the gitignore matcher, has the 2 s.
        wire.request("ping", timeout=60)
        assert "result" in wire.initialize(timeout=2)
        listed = wire.request("resources/list", timeout=10)
        names = {resource["name"] for resource in listed["result"]["resources"]}
        assert "kept.txt" in names
        assert "a" * 60 in names  # the glob needs a b: nothing is ignored


async def test_a_tree_item_quoted_for_its_space_names_its_file_back(
    tmp_path: Path, make_server: Any, call: Any
) -> None:
    root = tmp_path / "quoted"
    (root / 'my "x" y\tz').mkdir(parents=True)
    (root / 'my "x" y\tz' / "a.txt").write_text("found\n")
    async with Client(make_server(root)) as client:
        _, tree = await call(client, "show_tree")
        shown = "my \\x22x\\x22 y\\tz"
        assert f'"{shown}"/ a.txt' in tree.split("\n")
        failed, text = await call(client, "read_file", path=f"{shown}/a.txt")
        assert not failed, text
        assert "```text\nfound\n```" in text


async def test_a_query_that_is_no_text_is_refused_saying_why(client: Client[Any], call: Any) -> None:
    for arguments in ({"query": "\ud800"}, {"query": "\udcff", "regex": True}, {"query": "(?<=a)b", "regex": True}):
        failed, text = await call(client, "search_text", **arguments)
        assert failed
        assert "unexpectedly" not in text
        assert "surrogate" in text or "UTF-8" in text or "look-around" in text, text


async def test_a_cursor_into_a_file_at_the_path_limit_is_taken_back(tmp_path: Path, make_server: Any) -> None:
    """A page can stop at a file whose path is near PATH_MAX: its cursor carries that path and must be accepted."""
    root = tmp_path / "deepest"
    deep = root
    for level in range(16):
        deep = deep / (f"l{level:02}" + "d" * 240)
    deep.mkdir(parents=True)
    for number in range(3):
        (deep / f"f{number}.txt").write_text("MATCH\n")
    async with Client(make_server(root)) as client:
        for tool, arguments, key in (
            ("search_text", {"query": "MATCH", "limit": 1}, "hits"),
            ("find_files", {"pattern": "f*.txt", "limit": 1}, "paths"),
        ):
            found: list[str] = []
            for _ in range(5):
                result = await client.call_tool_mcp(tool, arguments)
                assert not result.is_error, _text(result)[:300]
                found += result.structured_content[key]
                cursor = result.structured_content.get("next_cursor")
                if cursor is None:
                    break
                arguments = {**arguments, "cursor": cursor}
            assert len(found) == 3, tool


async def test_gitignores_of_unclosed_brackets_cost_a_walk_little(tmp_path: Path, make_server: Any) -> None:
    """Thirty directories, each with a .gitignore of 256 lines of 999 unclosed `[`: translating each line
    rescanned it per `[` (about 5 s a file, 150 s a walk). With a deadline of 20 s the walk must finish."""
    root = tmp_path / "brackets"
    for n in range(30):
        folder = root / f"d{n:02d}"
        folder.mkdir(parents=True)
        (folder / ".gitignore").write_text(CATASTROPHIC_RULES)
        (folder / "kept.txt").write_text("MATCH\n")
    server = make_server(root)
    server.call_timeout_s = 20
    async with Client(server, mode="legacy") as client:
        for tool, arguments in (("find_files", {"pattern": "*.txt"}), ("search_text", {"query": "MATCH"})):
            result = await assert_ping_answered_during(client, client.call_tool_mcp(tool, arguments))
            assert not result.is_error, _text(result)[:300]
            assert "d29/kept.txt" in _text(result)


async def test_a_failed_edit_s_closest_line_hint_costs_little_in_a_file_of_lookalike_lines(
    tmp_path: Path, make_server: Any
) -> None:
    """An edit whose old_text is not found names the closest line: difflib compared it with every line of the
    file, quadratic in a line's length, so 20,000 lines that are each a shuffle of the asked line took 12 s (and a
    sync tool's thread runs on past any deadline). Within a deadline of 10 s the failure must arrive, with a hint."""
    import random

    rng = random.Random(7)
    line = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(190))
    root = tmp_path / "lookalike"
    root.mkdir()
    (root / "lines.txt").write_text("\n".join("".join(rng.sample(line, len(line))) for _ in range(20_000)) + "\n")
    server = make_server(root)
    server.call_timeout_s = 10
    async with Client(server, mode="legacy") as client:
        arguments = {"path": "lines.txt", "edits": [{"old_text": line[::-1], "new_text": "x"}]}
        result = await assert_ping_answered_during(client, client.call_tool_mcp("edit_file", arguments))
        text = assert_failure_holds(result, [])
        assert "was not found" in text, text[:300]
