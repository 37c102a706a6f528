"""`make bench-tokens`: what each track costs the model in tokens, for the same tasks, in one run.

    uv run python bench/tokens.py [--no-anchors] [--only SECTION ...] [--output bench/results-tokens.md]

Counted with an offline o200k_base tokenizer (bpe-openai), on what the model sees:
- MCP track: the schema floor once (each listed tool's name + description + inputSchema), then per call the
  tool name, the arguments as JSON and the result text;
- command-line + Skill track: the skill's name + description (resident), its SKILL.md body once (read when
  a task matches), then per call the command line and what it prints;
- plain shell: the command line and what it prints.
Every server runs as a subprocess as a host or a shell runs it; GitHub and Slack run against the test suites'
fake APIs. Anchors install from the package registries at bench time (npm, uvx); `--no-anchors` skips them.
Writes bench/results-tokens.md and prints it; `--only` (floors, filesystem, db, github, slack) runs some sections
and prints them without writing the report, for a quick look while developing.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp_server_core.testing.wire import StdioWire, python_module

HERE = Path(__file__).parent
ROOT = HERE.parent
ALCHEMY = "mcp-alchemy==2026.10.15.202659"

with warnings.catch_warnings():  # bpe-openai 0.1 opens its data with a deprecated importlib call
    warnings.simplefilter("ignore", DeprecationWarning)
    import bpe_openai

    _ENCODING = bpe_openai.get_encoding("o200k_base")


def tokens(text: str) -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return len(_ENCODING.encode(text))


# --- the tracks -----------------------------------------------------------------------------------------------

Call = tuple[str, dict[str, Any]]


class McpTrack:
    """One server over stdio: its schema floor and the cost of each call."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.wire = StdioWire(argv, env=env)
        self.wire.initialize(timeout=120)
        listed = self.wire.request("tools/list", {})["result"]["tools"]
        self.tools = len(listed)
        self.floor = sum(
            tokens(t["name"]) + tokens(t.get("description") or "") + tokens(json.dumps(t["inputSchema"]))
            for t in listed
        )
        self.spent = 0

    def call(self, name: str, arguments: dict[str, Any]) -> str:
        answer = self.wire.request("tools/call", {"name": name, "arguments": arguments}, timeout=120)["result"]
        text = "\n".join(block.get("text", "") for block in answer.get("content", []))
        if answer.get("isError"):
            raise RuntimeError(f"{name} failed: {text[:300]}")
        self.spent += tokens(name) + tokens(json.dumps(arguments)) + tokens(text)
        return text

    def close(self) -> None:
        self.wire.close()


class CommandTrack:
    """The same server's commands, with its Skill: resident name + description, the body read once."""

    def __init__(self, argv: list[str], env: dict[str, str], shown: str) -> None:
        self.argv, self.env, self.shown = argv, env, shown
        skill = self._run("skill")
        front, body = skill.split("\n---\n", 1)
        name = re.search(r"^name: (.*)$", front, re.M)
        description = re.search(r"^description: (.*)$", front, re.M)
        assert name
        assert description
        self.resident = tokens(f"{name.group(1)}: {description.group(1)}")
        self.body = tokens(body)
        self.spent = 0

    def _run(self, *words: str) -> str:
        done = subprocess.run([*self.argv, *words], capture_output=True, text=True, env=self.env, timeout=120)
        if done.returncode:
            raise RuntimeError(f"{words}: {done.stderr[-300:]}")
        return done.stdout

    def call(self, *words: str) -> str:
        out = self._run("call", *words)
        self.spent += tokens(shlex.join([self.shown, "call", *words])) + tokens(out)
        return out


class Shell:
    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        self.spent = 0

    def run(self, command: str) -> str:
        done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, cwd=self.cwd, timeout=120)
        self.spent += tokens(command) + tokens(done.stdout + done.stderr)
        return done.stdout


# --- filesystem: three tasks on a copy of a real source tree -------------------------------------------------

DEFINITION = "def transform_context_annotations"
EDIT_OLD, EDIT_NEW = "# --- Context utilities ---", "# --- Context helpers ---"


def source_tree(scratch: Path) -> Path:
    """A copy of fastmcp's own sources: a real tree of ~400 Python files, changed freely by the edit task."""
    import fastmcp

    tree = scratch / "fastmcp"
    shutil.copytree(Path(fastmcp.__file__).parent, tree, ignore=shutil.ignore_patterns("__pycache__"))
    return tree


def _hit(text: str) -> tuple[str, int]:
    """(path, line) of the first search hit in our rendering: a path line, then `N: text` lines."""
    path = ""
    for line in text.splitlines():
        if line.endswith(".py"):
            path = line.strip()
        match = re.match(r"^\s*(\d+)[:-]", line)
        if match and path:
            return path, int(match.group(1))
    raise RuntimeError(f"no hit in {text[:300]}")


def filesystem_tasks(tree: Path, anchors: bool, npm_dir: Path) -> dict[str, dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    fresh = lambda: _fresh_copy(tree)  # noqa: E731 - each track edits its own copy

    copy = fresh()
    mcp = McpTrack(python_module("mcp_server_filesystem", str(copy)))
    path, line = _hit(mcp.call("search_text", {"query": DEFINITION}))
    mcp.call("read_file", {"path": path, "offset": line, "lines": 30})
    mcp.call("show_tree", {"depth": 2})
    mcp.call("edit_file", {"path": "server/dependencies.py", "edits": [{"old_text": EDIT_OLD, "new_text": EDIT_NEW}]})
    mcp.close()
    rows["mcp-server-filesystem (MCP)"] = {"floor": mcp.floor, "tools": mcp.tools, "calls": mcp.spent}

    copy = fresh()
    cli = CommandTrack(python_module("mcp_server_filesystem", str(copy)), dict(os.environ), "mcp-server-filesystem")
    path, line = _hit(cli.call("search_text", DEFINITION))
    cli.call("read_file", path, "--offset", str(line), "--lines", "30")
    cli.call("show_tree", "--depth", "2")
    cli.call(
        "edit_file", "server/dependencies.py", "--edits", json.dumps([{"old_text": EDIT_OLD, "new_text": EDIT_NEW}])
    )
    rows["mcp-server-filesystem (CLI + Skill)"] = {"resident": cli.resident, "body": cli.body, "calls": cli.spent}

    copy = fresh()
    shell = Shell(copy)
    hit = shell.run(f"grep -rn '{DEFINITION}' .").splitlines()[0]
    file, number = hit.split(":")[:2]
    shell.run(f"sed -n '{number},{int(number) + 29}p' {file}")
    shell.run("find . -maxdepth 2 -not -name '*.pyc'")
    shell.run(
        f"sed -i 's/{EDIT_OLD}/{EDIT_NEW}/' server/dependencies.py && grep -n '{EDIT_NEW}' server/dependencies.py"
    )
    rows["shell (grep, sed, find)"] = {"calls": shell.spent}

    official = install_npm(npm_dir, "@modelcontextprotocol/server-filesystem", "dist/index.js") if anchors else None
    if official:
        copy = fresh()
        mcp = McpTrack(["node", official, str(copy)])
        # No content search: the file is found by name, then read whole (its reads take head/tail, not a range).
        found = mcp.call("search_files", {"path": str(copy), "pattern": "**/dependencies.py"})
        target = next((line for line in found.splitlines() if line.endswith("server/dependencies.py")), None)
        if target is None:
            raise RuntimeError(f"the official server's search_files found no dependencies.py: {found[:300]}")
        mcp.call("read_text_file", {"path": target})
        mcp.call("directory_tree", {"path": str(copy)})
        mcp.call("edit_file", {"path": target, "edits": [{"oldText": EDIT_OLD, "newText": EDIT_NEW}]})
        mcp.close()
        rows["official server-filesystem (MCP)"] = {"floor": mcp.floor, "tools": mcp.tools, "calls": mcp.spent}
    return rows


def _fresh_copy(tree: Path) -> Path:
    target = Path(tempfile.mkdtemp(prefix="tokens-")) / "src"
    shutil.copytree(tree, target)
    return target


# --- db: list tables, describe two, one aggregate, on the bundled sample ------------------------------------

AGGREGATE = "SELECT status, count(*) AS orders FROM orders GROUP BY status ORDER BY orders DESC"


def db_tasks(anchors: bool, scratch: Path) -> dict[str, dict[str, Any]]:
    from mcp_server_db.database import sample_path

    sample = scratch / "sample.db"
    shutil.copy(sample_path(), sample)
    url = f"sqlite:///{sample}"
    rows: dict[str, dict[str, Any]] = {}
    mcp = McpTrack(python_module("mcp_server_db", url, "--schema-poll-s", "0"))
    mcp.call("find_objects", {"kinds": ["table"]})
    mcp.call("describe_tables", {"tables": ["orders", "order_items"]})
    mcp.call("run_query", {"sql": AGGREGATE})
    mcp.close()
    rows["mcp-server-db (MCP)"] = {"floor": mcp.floor, "tools": mcp.tools, "calls": mcp.spent}

    cli = CommandTrack(python_module("mcp_server_db", url), dict(os.environ), "mcp-server-db")
    cli.call("find_objects", "--kinds", "table")
    cli.call("describe_tables", "orders", "order_items")
    cli.call("run_query", AGGREGATE)
    rows["mcp-server-db (CLI + Skill)"] = {"resident": cli.resident, "body": cli.body, "calls": cli.spent}

    shell = Shell(scratch)
    shell.run("sqlite3 sample.db .tables")
    shell.run("sqlite3 sample.db '.schema orders' '.schema order_items'")
    shell.run(f"sqlite3 -header sample.db '{AGGREGATE}'")
    rows["shell (sqlite3)"] = {"calls": shell.spent}

    if anchors:
        uvx = [shutil.which("uvx") or sys.executable, *([] if shutil.which("uvx") else ["-m", "uv", "tool", "run"])]
        mcp = McpTrack([*uvx, "--quiet", "--from", ALCHEMY, "mcp-alchemy"], {"DB_URL": url})
        mcp.call("all_table_names", {})
        mcp.call("schema_definitions", {"table_names": ["orders", "order_items"]})
        mcp.call("execute_query", {"query": AGGREGATE})
        mcp.close()
        rows[f"{ALCHEMY.split('==')[0]} (MCP)"] = {"floor": mcp.floor, "tools": mcp.tools, "calls": mcp.spent}
    return rows


# --- GitHub and Slack, against the suites' fakes ------------------------------------------------------------


def _load(name: str, path: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, ROOT / path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def github_tasks() -> dict[str, dict[str, Any]]:
    module = _load("tokens_fake_github", "packages/mcp-server-github/tests/fake_github.py")
    fake = module.FakeGitHub().start()
    env = {**os.environ, "GITHUB_TOKEN": module.TOKEN}
    argv = python_module("mcp_server_github", "--api-url", fake.url)
    rows: dict[str, dict[str, Any]] = {}
    try:
        mcp = McpTrack([*argv, "--toolsets", "all"], env)
        mcp.call("get_issue", {"repo": "acme/widgets", "number": 1})
        mcp.call("get_pull_request", {"repo": "acme/widgets", "number": 46})
        mcp.close()
        rows["mcp-server-github (MCP, all toolsets)"] = {"floor": mcp.floor, "tools": mcp.tools, "calls": mcp.spent}
        cli = CommandTrack([*argv, "--toolsets", "all"], env, "mcp-server-github")
        cli.call("get_issue", "acme/widgets", "1")
        cli.call("get_pull_request", "acme/widgets", "46")
        rows["mcp-server-github (CLI + Skill)"] = {"resident": cli.resident, "body": cli.body, "calls": cli.spent}
    finally:
        fake.stop()
    return rows


def slack_tasks(scratch: Path) -> dict[str, dict[str, Any]]:
    module = _load("tokens_fake_slack", "packages/mcp-server-slack/tests/fake_slack.py")
    fake = module.FakeSlack()
    rows: dict[str, dict[str, Any]] = {}
    with fake.serve():
        token = scratch / "slack-token"
        token.write_text(module.BOT_TOKEN + "\n" + module.USER_TOKEN + "\n")
        argv = python_module("mcp_server_slack", "--token-file", str(token), "--api-url", fake.url)
        mcp = McpTrack(argv)
        mcp.call("read_messages", {"channel": "#general"})
        mcp.call("search_messages", {"query": "deploy"})
        mcp.close()
        rows["mcp-server-slack (MCP)"] = {"floor": mcp.floor, "tools": mcp.tools, "calls": mcp.spent}
        cli = CommandTrack(argv, dict(os.environ), "mcp-server-slack")
        cli.call("read_messages", "#general")
        cli.call("search_messages", "deploy")
        rows["mcp-server-slack (CLI + Skill)"] = {"resident": cli.resident, "body": cli.body, "calls": cli.spent}
    return rows


# --- schema floors ------------------------------------------------------------------------------------------


def floors(tmp: Path) -> list[tuple[str, list[tuple[int, int]]]]:
    """Per server: (tools, tokens) at the default toolsets, with every toolset on, and in dynamic mode."""
    slack = _load("tokens_fake_slack_floor", "packages/mcp-server-slack/tests/fake_slack.py")
    token = tmp / "slack-floor-token"
    token.write_text(slack.BOT_TOKEN + "\n")
    launchers: dict[str, Callable[[list[str]], list[str]]] = {
        "mcp-server-filesystem": lambda extra: python_module("mcp_server_filesystem", str(tmp), *extra),
        "mcp-server-db": lambda extra: python_module("mcp_server_db", "--schema-poll-s", "0", *extra),
        "mcp-server-github": lambda extra: python_module(
            "mcp_server_github", "--api-url", "http://127.0.0.1:9", *extra
        ),
        # Listing tools sends no Slack request: an address where nothing listens is enough.
        "mcp-server-slack": lambda extra: python_module(
            "mcp_server_slack", "--token-file", str(token), "--api-url", "http://127.0.0.1:9", *extra
        ),
        "mcp-server-template": lambda extra: python_module(
            "mcp_server_template", "--notes-dir", str(tmp / "n"), *extra
        ),
    }
    rows = []
    for name, launch in launchers.items():
        measured = []
        for toolsets in ([], ["--toolsets", "all"], ["--toolsets", "dynamic"]):
            track = McpTrack(launch(toolsets))
            track.close()
            measured.append((track.tools, track.floor))
        rows.append((name, measured))
    return rows


def install_npm(into: Path, package: str, entry: str) -> str | None:
    npm = shutil.which("npm")
    if npm is None:
        return None
    done = subprocess.run(
        [npm, "install", "--prefix", str(into), "--no-audit", "--no-fund", package],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    path = into / "node_modules" / package / entry
    if done.returncode or not path.exists():
        print(f"npm install {package} failed: {done.stderr[-300:]}", file=sys.stderr)
        return None
    return str(path)


# --- the report ---------------------------------------------------------------------------------------------


def render(tasks: dict[str, dict[str, dict[str, Any]]], floor_rows: list[tuple[str, list[tuple[int, int]]]]) -> str:
    lines = [
        "# Tokens: MCP, command line + Skill, and the shell, for the same tasks",
        "",
        "`make bench-tokens` (bench/tokens.py); o200k_base, counted offline with bpe-openai on what the model sees.",
        "",
        "## Schema floor (tools/list: name + description + inputSchema)",
        "",
        "| server | default: tools | tokens | all toolsets: tools | tokens | dynamic: tools | tokens |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {name} | " + " | ".join(f"{tools} | {tokens:,}" for tools, tokens in measured) + " |"
        for name, measured in floor_rows
    ]
    for task, rows in tasks.items():
        shell = next((r["calls"] for name, r in rows.items() if name.startswith("shell")), None)
        lines += [
            "",
            f"## {task}",
            "",
            "| track | resident (floor or skill) | read once (skill body) | calls | total | × shell |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for name, row in rows.items():
            resident = row.get("floor", row.get("resident", 0))
            body = row.get("body", 0)
            total = resident + body + row["calls"]
            ratio = f"{total / shell:.2f}" if shell else "n/a"
            lines.append(f"| {name} | {resident:,} | {body:,} | {row['calls']:,} | {total:,} | {ratio} |")
    return "\n".join(lines) + "\n"


SECTIONS = ("floors", "filesystem", "db", "github", "slack")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--no-anchors", action="store_true", help="skip the anchor servers (no npm or uvx install)")
    parser.add_argument("--only", nargs="+", choices=SECTIONS, help="run these sections; print, write nothing")
    parser.add_argument("--output", default=str(HERE / "results-tokens.md"))
    options = parser.parse_args()
    chosen = set(options.only or SECTIONS)
    anchors = not options.no_anchors
    with tempfile.TemporaryDirectory() as folder:
        scratch = Path(folder)
        sections: dict[str, Callable[[], dict[str, dict[str, Any]]]] = {
            "filesystem: find a definition and read 30 lines; a tree to depth 2; one exact edit": lambda: (
                filesystem_tasks(source_tree(scratch), anchors, scratch / "npm")
            ),
            "db: list tables, describe two, one aggregate query (bundled sample)": lambda: db_tasks(anchors, scratch),
            "github: read an issue with its comments; read a pull request with its files (fake API)": github_tasks,
            "slack: read a channel page; search (fake API)": lambda: slack_tasks(scratch),
        }
        tasks = {title: run() for title, run in sections.items() if title.split(":")[0] in chosen}
        report = render(tasks, floors(scratch) if "floors" in chosen else [])
    if options.only is None:
        Path(options.output).write_text(report)
    print(report)


if __name__ == "__main__":
    main()
