"""The command-line track, for every server: the same tools as commands, answering what MCP answers.

Each server is run as its users run it (`python -m mcp_server_X [server options] call TOOL ...`), beside the
same server spoken to over stdio, so the comparison is of the two tracks as shipped, not of helpers in-process.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp_server_core.testing import StdioWire, python_module

from tests.conftest import SERVERS, fake_module

MCP_MODULES = ("fastmcp", "mcp", "mcp_types")


@pytest.fixture(scope="module")
def github_fake() -> Iterator[tuple[Any, Any]]:
    """(the fake's module, a running FakeGitHub): the package's own fake API, which the root suite does not start."""
    module = fake_module("github", "packages/mcp-server-github/tests/fake_github.py")
    for fake in module.running():
        yield module, fake


def _launch(server: str, tmp: Path, github_fake: Any) -> tuple[list[str], dict[str, str]]:
    """argv of the server with its options, and its environment (tokens travel there, never on argv)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "SLACK_", "MCP_"))}
    if server == "github":
        module, fake = github_fake
        env["GITHUB_TOKEN"] = module.TOKEN
        return python_module("mcp_server_github", "--api-url", fake.url), env
    if server == "filesystem":
        (tmp / "src").mkdir(exist_ok=True)
        (tmp / "src" / "app.py").write_text("def main():\n    return 42\n")
    return SERVERS[server](tmp), env


CALLS: dict[str, tuple[str, dict[str, Any], list[str]]] = {
    # server: (tool, MCP arguments, the same as command words)
    "template": ("search_notes", {"query": "milk"}, ["milk"]),
    "db": (
        "run_query",
        {"sql": "SELECT count(*) AS n FROM sqlite_master"},
        ["SELECT count(*) AS n FROM sqlite_master"],
    ),
    "filesystem": ("search_text", {"query": "return 42"}, ["return 42"]),
    "github": ("get_issue", {"repo": "acme/widgets", "number": 1}, ["acme/widgets", "1"]),
    "slack": ("list_channels", {"limit": 5}, ["--limit", "5"]),
}


def _run(argv: list[str], env: dict[str, str], *words: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*argv, *words], capture_output=True, text=True, env=env, timeout=120, check=False)


@pytest.mark.parametrize("server", sorted(CALLS))
def test_a_command_prints_exactly_the_text_the_mcp_result_carries(
    server: str, tmp_path: Path, github_fake: Any
) -> None:
    argv, env = _launch(server, tmp_path, github_fake)
    tool, arguments, words = CALLS[server]
    if server == "template":
        assert _run(argv, env, "call", "write_note", "shopping", "milk and bread").returncode == 0
    with StdioWire(argv, env=env) as wire:
        wire.initialize()
        answer = wire.request("tools/call", {"name": tool, "arguments": arguments})["result"]
    assert not answer.get("isError"), answer
    command = _run(argv, env, "call", tool, *words)
    assert command.returncode == 0, command.stderr
    assert command.stdout == answer["content"][0]["text"] + "\n"
    as_json = _run(argv, env, "call", tool, *words, "--json")
    assert json.loads(as_json.stdout) == answer.get("structuredContent", {"text": answer["content"][0]["text"]})


@pytest.mark.parametrize("server", sorted(CALLS))
def test_a_command_imports_neither_fastmcp_nor_the_mcp_sdk(server: str, tmp_path: Path, github_fake: Any) -> None:
    argv, env = _launch(server, tmp_path, github_fake)
    tool, _, words = CALLS[server]
    module = argv[argv.index("-m") + 1]
    probe = (
        "import sys, runpy\n"
        f"sys.argv = {[module, *argv[argv.index('-m') + 2 :], 'call', tool, *words]!r}\n"
        "try:\n"
        f"    runpy.run_module({module!r}, run_name='__main__')\n"
        "except SystemExit as exc:\n"
        "    code = exc.code\n"
        f"loaded = sorted(m for m in sys.modules if m.split('.')[0] in {MCP_MODULES!r})\n"
        "print('LOADED', loaded, 'EXIT', code, file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120)
    assert "LOADED [] EXIT 0" in done.stderr, done.stderr[-2000:]


def test_exit_status_says_which_side_failed(tmp_path: Path) -> None:
    argv = SERVERS["template"](tmp_path)
    env = dict(os.environ)
    missing = _run(argv, env, "call", "read_note", "nope")
    assert (missing.returncode, missing.stdout) == (1, "")
    assert "not found" in missing.stderr
    assert "Traceback" not in missing.stderr
    unknown = _run(argv, env, "call", "read_nots")
    assert unknown.returncode == 2
    assert "read_note" in unknown.stderr
    bad = _run(argv, env, "call", "write_note", "../escape", "x")
    assert bad.returncode == 2
    assert "--name" in bad.stderr
    assert not (tmp_path / "escape").exists()
    tool_help = _run(argv, env, "call", "write-note", "--help")  # dashes work as in any command
    assert tool_help.returncode == 0
    assert "--overwrite" in tool_help.stdout
    discovery = _run([*argv, "--toolsets", "dynamic"], env, "call", "list_toolsets")
    assert discovery.returncode == 2
    assert "mcp-server-template tools" in discovery.stderr  # what to do instead, not only why not


def test_read_only_holds_on_the_command_track_seen_from_outside(tmp_path: Path) -> None:
    template = SERVERS["template"](tmp_path)
    refused = _run([*template, "--read-only"], dict(os.environ), "call", "write_note", "x", "y")
    assert refused.returncode == 2
    assert "read-only" in refused.stderr
    assert not (tmp_path / "notes").exists() or not any((tmp_path / "notes").iterdir())

    db_argv = python_module("mcp_server_db", f"sqlite:///{tmp_path / 'guarded.db'}")
    with sqlite3.connect(tmp_path / "guarded.db") as setup:
        setup.execute("CREATE TABLE t (x INTEGER)")
        setup.execute("INSERT INTO t VALUES (1)")
    for sql in ("DELETE FROM t", "WITH d AS (DELETE FROM t RETURNING x) SELECT * FROM d", "SELECT 1; DELETE FROM t"):
        done = _run(db_argv, dict(os.environ), "call", "run_query", sql)
        assert done.returncode == 1, (sql, done.stdout)
    with sqlite3.connect(tmp_path / "guarded.db") as second:
        assert second.execute("SELECT count(*) FROM t").fetchone() == (1,)
    no_writes = _run(db_argv, dict(os.environ), "call", "execute_statement", "DELETE FROM t")
    assert no_writes.returncode == 2  # not offered without --allow-write


def test_a_json_argument_is_written_from_the_shape_its_skill_line_gives(tmp_path: Path) -> None:
    # The MCP track shows edit_file's whole schema; the command track must say as much, or a model reading the
    # skill could only guess what `edits` holds.
    argv, env = _launch("filesystem", tmp_path, None)
    skill = _run(argv, env, "skill").stdout
    line = next(line for line in skill.splitlines() if "call edit_file" in line)
    shape = re.search(r"'(\[.*?\])'", line)
    assert shape, line
    assert shape.group(1) == '[{"old_text":str,"new_text":str,"count"?:int}]'
    assert shape.group(1) in _run(argv, env, "call", "edit_file", "--help").stdout.replace("\n", "")
    edits = json.dumps([{"old_text": "return 42", "new_text": "return 43"}])
    done = _run(argv, env, "call", "edit_file", "src/app.py", edits)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "src" / "app.py").read_text() == "def main():\n    return 43\n"


# --- Agent Skills ----------------------------------------------------------------------------------------------


def _tokens(text: str) -> int:
    """o200k_base tokens, counted offline (bpe-openai 0.1 opens its data with a deprecated importlib call)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import bpe_openai

        return len(bpe_openai.get_encoding("o200k_base").encode(text))


def _front_matter(text: str) -> dict[str, str]:
    match = re.match(r"^---\n(.*?)\n---\n", text, re.S)
    assert match, "SKILL.md starts with YAML front matter"
    import yaml

    loaded = yaml.safe_load(match.group(1))
    assert isinstance(loaded, dict)
    return loaded


@pytest.mark.parametrize("server", sorted(CALLS))
def test_each_generated_skill_is_valid_cheap_and_every_command_it_names_runs(
    server: str, tmp_path: Path, github_fake: Any
) -> None:
    argv, env = _launch(server, tmp_path, github_fake)
    skills = tmp_path / "skills"
    written = _run(argv, env, "skill", "--output", str(skills))
    assert written.returncode == 0, written.stderr
    path = Path(written.stdout.strip())
    text = path.read_text()
    meta = _front_matter(text)
    name, description = meta["name"], meta["description"]
    assert name == path.parent.name == f"mcp-server-{server}"
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", name)
    assert len(name) <= 64
    assert 1 <= len(description) <= 1024
    resident = _tokens(f"{name}: {description}")
    assert resident <= 80, resident
    commands = re.findall(r"^- `call ([^\s`]+)", text, re.M)
    assert len(commands) >= 3
    paged = {
        tool: set(re.findall(r"`(--limit|--cursor)", options))
        for options, tools in re.findall(r"((?:`--(?:limit|cursor)[^`]*`[^`]*?)+)page ([a-z_, ]+)\.", text)
        for tool in tools.split(", ")
    }
    for tool in commands:
        helped = _run(argv, env, "call", tool, "--help")
        assert helped.returncode == 0, (tool, helped.stderr)
        assert tool in helped.stdout
        for option in paged.get(tool, ()):  # the skill says it pages with the option: it takes it
            assert option in helped.stdout, (tool, option)
    lint = subprocess.run(
        [sys.executable, "-m", "skillsaw", "lint", str(skills)], capture_output=True, text=True, timeout=120
    )
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_a_skill_details_the_default_toolsets_and_names_the_rest(tmp_path: Path, github_fake: Any) -> None:
    """The body is read whole into the model's context: a line each for the default toolsets' commands; the
    commands of a toolset the user turned on are named, and a toolset that is off is named with how to turn it on."""
    argv, env = _launch("github", tmp_path, github_fake)
    default = _run(argv, env, "skill").stdout
    everything = _run([*argv, "--toolsets", "all"], env, "skill").stdout
    detailed = re.compile(r"^- `call ([^\s`]+)", re.M)
    assert detailed.findall(everything) == detailed.findall(default)
    assert "get_pull_request" not in detailed.findall(everything)
    assert re.search(r"^- pull_requests: list_pull_requests, get_pull_request, ", everything, re.M)
    assert re.search(r"^Off: .*\bpull_requests\b.*--toolsets", default, re.M)
    assert "get_pull_request" not in default
    told = _run([*argv, "--toolsets", "all"], env, "call", "get_pull_request", "--help")
    assert told.returncode == 0, told.stderr


SPECS = {server: f"mcp_server_{server}.spec" for server in CALLS}


@pytest.mark.parametrize("server", sorted(CALLS))
def test_the_skill_served_over_stdio_is_the_text_the_skill_command_writes(
    server: str, tmp_path: Path, github_fake: Any
) -> None:
    """A host of the handshake era finds the skill in resources/list and reads SKILL.md back, byte for byte."""
    argv, env = _launch(server, tmp_path, github_fake)
    written = _run(argv, env, "skill")
    assert written.returncode == 0, written.stderr
    uri = f"skill://mcp-server-{server}/SKILL.md"
    with StdioWire(argv, env=env) as wire:
        wire.initialize()
        listed = wire.request("resources/list")["result"]["resources"]
        served = wire.request("resources/read", {"uri": uri})["result"]["contents"]
        manifest = wire.request("resources/read", {"uri": uri.replace("SKILL.md", "_manifest")})["result"]
    assert [r["uri"] for r in listed if r["uri"].startswith("skill://")] == [uri]  # the manifest is read, not listed
    assert [(c["mimeType"], c["text"]) for c in served] == [("text/markdown", written.stdout)]
    files = json.loads(manifest["contents"][0]["text"])["files"]
    assert [(f["path"], f["size"]) for f in files] == [("SKILL.md", len(written.stdout.encode()))]


@pytest.mark.parametrize("server", sorted(CALLS))
async def test_a_skills_client_lists_and_reads_the_skill_the_skill_command_writes(
    server: str, tmp_path: Path, github_fake: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the Skills extension (skills/list, then every file checked against its digest), in memory, the
    server built as `run` builds it from the same options."""
    import importlib

    from fastmcp import Client
    from fastmcp.skills import SkillsClientExtension
    from mcp_server_core.tracks.cli import _parser, build

    argv, env = _launch(server, tmp_path, github_fake)
    written = _run(argv, env, "skill")
    assert written.returncode == 0, written.stderr
    spec = importlib.import_module(SPECS[server]).SPEC
    for name, value in env.items():
        if name.startswith(("GITHUB_", "SLACK_")):
            monkeypatch.setenv(name, value)  # tokens travel in the environment, as on the command line
    options = vars(_parser(spec).parse_args(argv[argv.index("-m") + 2 :]))
    options.pop("print_config")
    settings = spec.settings(**{k: v for k, v in options.items() if v is not None})
    async with Client(build(spec, settings), extensions=[SkillsClientExtension()]) as client:
        listed = await client.list_skills()
        assert [(entry.uri, entry.frontmatter.root["name"]) for entry in listed] == [
            (f"skill://mcp-server-{server}/SKILL.md", f"mcp-server-{server}")
        ]
        skill = await client.read_skill(listed[0].uri)
    assert dict(skill.files) == {"SKILL.md": written.stdout.encode()}


def test_a_command_is_bounded_by_the_call_timeout_and_stops_its_work(tmp_path: Path) -> None:
    """As on the MCP track: past --call-timeout-s the command fails at once and the statement is interrupted
    (a count SQLite would take minutes over), instead of the shell waiting for it."""
    endless = (
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000000) SELECT count(*) FROM c"
    )
    argv = python_module("mcp_server_db", "--call-timeout-s", "1")
    started = time.monotonic()
    done = _run(argv, dict(os.environ), "call", "run_query", endless)
    assert done.returncode == 1, done.stdout
    assert "did not finish within 1 s" in done.stderr
    assert time.monotonic() - started < 30  # minutes without the bound; seconds with it
