"""`make bench-tokens`: what each track costs the model in tokens, for the same tasks, in one run.

    uv run python bench/tokens.py [--no-anchors] [--only SECTION ...] [--output bench/results-tokens.md]

Counted with an offline o200k_base tokenizer (bpe-openai), on what the model sees:
- MCP track: the schema floor once (each listed tool's name + description + inputSchema), then per call the
  tool name, the arguments as JSON and the result text; started with `--toolsets dynamic` (and GitHub at its
  defaults, which lack get_pull_request) list_toolsets and enable_toolset are calls too and the schemas they
  switch on are read once;
- command-line + Skill track: the skill's name + description (resident), its SKILL.md body once (read when
  a task matches), then per call the command line and what it prints; the same for the script and SKILL.md
  that `fastmcp generate-cli` writes for our server;
- plain shell: the command line and what it prints (GitHub, Slack: curl on the API, jq picking fields).
Every server runs as a subprocess as a host or a shell runs it; GitHub and Slack run against the test suites'
fake APIs, the archived Node reference servers too (bench/fetch_to_fake.cjs sends their fetches for the real
host to the fakes). Anchors install from the package registries at bench time (npm, uvx); `--no-anchors` skips
them. Writes bench/results-tokens.md and prints it, the issue's targets marked met or not; `--only` (floors,
filesystem, db, github, slack) runs some sections and prints them without writing the report.
"""

from __future__ import annotations

import argparse
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

from generated_cli import generate as generate_cli
from mcp_server_core.testing.modules import module_at
from mcp_server_core.testing.wire import StdioWire, python_module

HERE = Path(__file__).parent
ROOT = HERE.parent
ALCHEMY = "mcp-alchemy==2026.10.15.202659"

with warnings.catch_warnings():  # bpe-openai 0.1 opens its data with a deprecated importlib call
    warnings.simplefilter("ignore", DeprecationWarning)
    import bpe_openai  # type: ignore[import-untyped]

    _ENCODING = bpe_openai.get_encoding("o200k_base")


def tokens(text: str) -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return len(_ENCODING.encode(text))


# --- the tracks -----------------------------------------------------------------------------------------------

# A fake API's address appears in what a server prints (the GitHub fake writes its own URL into payloads, as
# GitHub Enterprise does): each track counts the text as it would read against the real host, so the figure
# does not depend on the port the fake got.
RealOrigins = dict[str, str]


def _as_real(text: str, origins: RealOrigins) -> str:
    for fake, real in origins.items():
        text = text.replace(fake, real)
    return text


def _schema_tokens(tool: dict[str, Any]) -> int:
    return tokens(tool["name"]) + tokens(tool.get("description") or "") + tokens(json.dumps(tool["inputSchema"]))


class McpTrack:
    """One server over stdio: its schema floor and the cost of each call.

    A call to a tool the server does not list yet (a toolset that is off, as in `--toolsets dynamic`) goes the
    way a model's would: list_toolsets once, enable_toolset for the toolset naming the tool, then the schemas
    that appear are read once (`mounted`) and the call is made."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None, origins: RealOrigins | None = None) -> None:
        self.origins = origins or {}
        self.wire = StdioWire(argv, env=env)
        self.wire.initialize(timeout=120)
        listed = self.wire.request("tools/list", {})["result"]["tools"]
        self.listed = {t["name"] for t in listed}
        self.tools = len(listed)
        self.floor = sum(_schema_tokens(t) for t in listed)
        self.spent = 0
        self.mounted = 0
        self._toolsets: dict[str, str] | None = None  # tool name -> the toolset holding it

    def call(self, name: str, arguments: dict[str, Any]) -> str:
        if name not in self.listed:
            self._switch_on_toolset_of(name)
        answer = self.wire.request("tools/call", {"name": name, "arguments": arguments}, timeout=120)["result"]
        text = _as_real("\n".join(block.get("text", "") for block in answer.get("content", [])), self.origins)
        if answer.get("isError"):
            raise RuntimeError(f"{name} failed: {text[:300]}")
        self.spent += tokens(name) + tokens(json.dumps(arguments)) + tokens(text)
        return text

    def _switch_on_toolset_of(self, name: str) -> None:
        if self._toolsets is None:
            # The helpers' list_toolsets: one line a toolset, `NAME (on|off): what it holds. Tools: a, b`.
            self._toolsets = {
                tool: match.group(1)
                for match in re.finditer(r"^(\S+) \((?:on|off)\):.*Tools: (.*)$", self.call("list_toolsets", {}), re.M)
                for tool in match.group(2).split(", ")
            }
        if name not in self._toolsets:
            raise RuntimeError(f"no toolset holds {name}")
        self.call("enable_toolset", {"name": self._toolsets[name]})
        listed = self.wire.request("tools/list", {})["result"]["tools"]
        self.mounted += sum(_schema_tokens(t) for t in listed if t["name"] not in self.listed)
        self.listed |= {t["name"] for t in listed}

    def row(self) -> dict[str, Any]:
        return {"floor": self.floor, "tools": self.tools, "body": self.mounted, "calls": self.spent}

    def close(self) -> None:
        self.wire.close()


class CommandTrack:
    """The same server's commands, with its Skill: resident name + description, the body read once."""

    def __init__(self, argv: list[str], env: dict[str, str], shown: str, origins: RealOrigins | None = None) -> None:
        self.argv, self.env, self.shown, self.origins = argv, env, shown, origins or {}
        skill = self._run("skill")
        self.resident, self.body = _skill_tokens(skill)
        self.spent = 0

    def _run(self, *words: str) -> str:
        done = subprocess.run([*self.argv, *words], capture_output=True, text=True, env=self.env, timeout=120)
        if done.returncode:
            raise RuntimeError(f"{words}: {done.stderr[-300:]}")
        return _as_real(done.stdout, self.origins)

    def call(self, *words: str) -> str:
        out = self._run("call", *words)
        self.spent += tokens(shlex.join([self.shown, "call", *words])) + tokens(out)
        return out

    def row(self) -> dict[str, Any]:
        return {"resident": self.resident, "body": self.body, "calls": self.spent}


def _skill_tokens(skill: str) -> tuple[int, int]:
    """(resident, body): a Skill's `name: description` stays in context; its body is read when a task matches."""
    front, body = skill.split("\n---\n", 1)
    name = re.search(r"^name: \"?(.*?)\"?$", front, re.M)
    description = re.search(r"^description: \"?(.*?)\"?$", front, re.M)
    assert name
    assert description
    return tokens(f"{name.group(1)}: {description.group(1)}"), tokens(body)


class GeneratedCliTrack:
    """`fastmcp generate-cli` for the same server (bench/generated_cli.py): its SKILL.md (resident front matter,
    body read once), then each call counted as the SKILL.md tells the model to type it (`uv run --with fastmcp
    python cli.py call-tool …`) and as the script prints the answer (the structured content as JSON when the tool
    has one, else the text)."""

    def __init__(
        self, name: str, argv: list[str], env: dict[str, str], folder: Path, origins: RealOrigins | None = None
    ) -> None:
        self.origins = origins or {}
        self.generated = generate_cli(name, argv, env, folder)
        self.resident, self.body = _skill_tokens(self.generated.skill)
        self.spent = 0

    def call(self, name: str, arguments: dict[str, Any]) -> str:
        words = self.generated.argv(name, arguments)
        done = subprocess.run(
            [sys.executable, str(self.generated.script), *words], capture_output=True, text=True, timeout=120
        )
        out = _as_real(done.stdout, self.origins)
        if done.returncode:
            raise RuntimeError(f"generated CLI {name}: {out[-300:]} {done.stderr[-300:]}")
        self.spent += tokens(shlex.join(["uv", "run", "--with", "fastmcp", "python", "cli.py", *words])) + tokens(out)
        return out

    def row(self) -> dict[str, Any]:
        return {"resident": self.resident, "body": self.body, "calls": self.spent}


class Shell:
    """Plain shell commands; against a fake API each is counted as typed for the real host (`origins`)."""

    def __init__(self, cwd: Path, env: dict[str, str] | None = None, origins: RealOrigins | None = None) -> None:
        self.cwd, self.env, self.origins = cwd, {**os.environ, **(env or {})}, origins or {}
        self.spent = 0

    def run(self, command: str) -> str:
        done = subprocess.run(
            ["bash", "-c", command], capture_output=True, text=True, cwd=self.cwd, env=self.env, timeout=120
        )
        if done.returncode or not done.stdout.strip():  # a failed step would make the shell look cheap
            raise RuntimeError(f"{command}: {done.returncode} {done.stderr[-300:]}")
        shown, out = _as_real(command, self.origins), _as_real(done.stdout + done.stderr, self.origins)
        self.spent += tokens(shown) + tokens(out)
        if os.environ.get("BENCH_SHOW_SHELL"):
            print(f"$ {shown}\n{out}", file=sys.stderr)
        return done.stdout


# Our servers' MCP track again, started with only the discovery pair listed.
DYNAMIC = {"MCP, dynamic": "--toolsets dynamic"}


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
    """(path, line) of the first search hit: our rendering (a path line, then `N: text` lines) or grep's
    `path:N:text` (in the generated CLI's JSON)."""
    inline = re.search(r"([\w./-]+\.py):(\d+):", text)
    if inline:
        return inline.group(1), int(inline.group(2))
    path = ""
    for line in text.splitlines():
        if line.endswith(".py"):
            path = line.strip()
        match = re.match(r"^\s*(\d+)[:-]", line)
        if match and path:
            return path, int(match.group(1))
    raise RuntimeError(f"no hit in {text[:300]}")


ToolCall = Callable[[str, dict[str, Any]], str]


def _filesystem_calls(call: ToolCall) -> None:
    """The filesystem tasks as tool calls, for every track that calls tools by name and arguments."""
    path, line = _hit(call("search_text", {"query": DEFINITION}))
    call("read_file", {"path": path, "offset": line, "lines": 30})
    call("show_tree", {"depth": 2})
    call("edit_file", {"path": "server/dependencies.py", "edits": [{"old_text": EDIT_OLD, "new_text": EDIT_NEW}]})


def _mcp_rows(
    name: str,
    argv: list[str],
    calls: Callable[[ToolCall], None],
    kinds: dict[str, str],
    env: dict[str, str] | None = None,
    origins: RealOrigins | None = None,
) -> dict[str, dict[str, Any]]:
    """Rows for one server's MCP track under each kind of start, e.g. `{"MCP, dynamic": "--toolsets dynamic"}`:
    the same calls each time, a tool that is off switched on through discovery."""
    rows = {}
    for kind, options in kinds.items():
        mcp = McpTrack([*argv, *shlex.split(options)], env, origins)
        try:
            calls(mcp.call)
        finally:
            mcp.close()
        rows[f"{name} ({kind})"] = mcp.row()
    return rows


def _generated_cli_row(
    name: str,
    argv: list[str],
    calls: Callable[[ToolCall], None],
    folder: Path,
    env: dict[str, str] | None = None,
    origins: RealOrigins | None = None,
) -> dict[str, dict[str, Any]]:
    generated = GeneratedCliTrack(name, argv, env or {}, folder, origins)
    calls(generated.call)
    return {f"{name} via fastmcp generate-cli (CLI + its SKILL.md)": generated.row()}


def filesystem_tasks(tree: Path, anchors: bool, npm_dir: Path) -> dict[str, dict[str, Any]]:
    def fresh() -> Path:  # each track edits its own copy
        return _fresh_copy(tree)

    server = "mcp-server-filesystem"
    rows = _mcp_rows(server, python_module("mcp_server_filesystem", str(fresh())), _filesystem_calls, {"MCP": ""})
    rows |= _mcp_rows(server, python_module("mcp_server_filesystem", str(fresh())), _filesystem_calls, DYNAMIC)

    cli = CommandTrack(python_module("mcp_server_filesystem", str(fresh())), dict(os.environ), server)
    path, line = _hit(cli.call("search_text", DEFINITION))
    cli.call("read_file", path, "--offset", str(line), "--lines", "30")
    cli.call("show_tree", "--depth", "2")
    cli.call(
        "edit_file", "server/dependencies.py", "--edits", json.dumps([{"old_text": EDIT_OLD, "new_text": EDIT_NEW}])
    )
    rows[f"{server} (CLI + Skill)"] = cli.row()
    copy = fresh()
    rows |= _generated_cli_row(
        server, python_module("mcp_server_filesystem", str(copy)), _filesystem_calls, copy.parent / "generated"
    )

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
        rows["official server-filesystem (MCP, anchor)"] = mcp.row()
    return rows


def _fresh_copy(tree: Path) -> Path:
    target = Path(tempfile.mkdtemp(prefix="tokens-")) / "src"
    shutil.copytree(tree, target)
    return target


# --- db: list tables, describe two, one aggregate, on the bundled sample ------------------------------------

AGGREGATE = "SELECT status, count(*) AS orders FROM orders GROUP BY status ORDER BY orders DESC"


def _db_calls(call: ToolCall) -> None:
    call("find_objects", {"kinds": ["table"]})
    call("describe_tables", {"tables": ["orders", "order_items"]})
    call("run_query", {"sql": AGGREGATE})


def db_tasks(anchors: bool, scratch: Path) -> dict[str, dict[str, Any]]:
    from mcp_server_db.database import sample_path

    sample = scratch / "sample.db"
    shutil.copy(sample_path(), sample)
    url = f"sqlite:///{sample}"
    argv = python_module("mcp_server_db", url, "--schema-poll-s", "0")
    rows = _mcp_rows("mcp-server-db", argv, _db_calls, {"MCP": "", **DYNAMIC})

    cli = CommandTrack(python_module("mcp_server_db", url), dict(os.environ), "mcp-server-db")
    cli.call("find_objects", "--kinds", "table")
    cli.call("describe_tables", "orders", "order_items")
    cli.call("run_query", AGGREGATE)
    rows["mcp-server-db (CLI + Skill)"] = cli.row()
    rows |= _generated_cli_row("mcp-server-db", argv, _db_calls, scratch / "generated-db")

    shell = Shell(scratch)
    shell.run("sqlite3 sample.db .tables")
    shell.run("sqlite3 sample.db '.schema orders' '.schema order_items'")
    shell.run(f"sqlite3 -header sample.db '{AGGREGATE}'")
    rows["shell (sqlite3)"] = {"calls": shell.spent}

    if anchors:
        mcp = McpTrack([*_uvx(), "--quiet", "--from", ALCHEMY, "mcp-alchemy"], {"DB_URL": url})
        mcp.call("all_table_names", {})
        mcp.call("schema_definitions", {"table_names": ["orders", "order_items"]})
        mcp.call("execute_query", {"query": AGGREGATE})
        mcp.close()
        rows[f"{ALCHEMY.split('==')[0]} (MCP, anchor)"] = mcp.row()
    return rows


# --- GitHub and Slack, against the suites' fakes ------------------------------------------------------------


ARCHIVED_GITHUB = "@modelcontextprotocol/server-github"
ARCHIVED_SLACK = "@modelcontextprotocol/server-slack"
FETCH_TO_FAKE = HERE / "fetch_to_fake.cjs"


def archived_anchor(npm_dir: Path, package: str, routes: RealOrigins, env: dict[str, str]) -> McpTrack | None:
    """An archived reference server (Node) with its requests for `routes`' real origins sent to the fakes.

    They read no base-URL setting (their dist/ calls fetch on the hard-coded host), so a preload wraps Node's
    fetch (bench/fetch_to_fake.cjs) and refuses any other host; the servers' own code runs unchanged."""
    entry = install_npm(npm_dir, package, "dist/index.js")
    if entry is None:
        return None
    preload = {"NODE_OPTIONS": f"--require {FETCH_TO_FAKE}", "BENCH_FETCH_TO_FAKE": json.dumps(routes)}
    return McpTrack(["node", entry], {**env, **preload}, {fake: real for real, fake in routes.items()})


def _github_calls(call: ToolCall) -> None:
    call("get_issue", {"repo": "acme/widgets", "number": 1})
    call("get_pull_request", {"repo": "acme/widgets", "number": 46})


def github_tasks(anchors: bool, npm_dir: Path, scratch: Path) -> dict[str, dict[str, Any]]:
    module = module_at("tokens_fake_github", ROOT / "packages/mcp-server-github/tests/fake_github.py")
    fake = module.FakeGitHub().start()
    origins = {fake.url: "https://api.github.com"}
    env = {"GITHUB_TOKEN": module.TOKEN}
    argv = python_module("mcp_server_github", "--api-url", fake.url)
    server = "mcp-server-github"
    try:
        # get_issue is in the default toolsets (context, issues), get_pull_request in pull_requests, which the
        # default row switches on through discovery as the dynamic row does both.
        kinds = {"MCP, default toolsets": "", "MCP, all toolsets": "--toolsets all", **DYNAMIC}
        rows = _mcp_rows(server, argv, _github_calls, kinds, env, origins)
        cli = CommandTrack([*argv, "--toolsets", "all"], {**os.environ, **env}, server, origins)
        cli.call("get_issue", "acme/widgets", "1")
        cli.call("get_pull_request", "acme/widgets", "46")
        rows[f"{server} (CLI + Skill)"] = cli.row()
        rows |= _generated_cli_row(
            server, [*argv, "--toolsets", "all"], _github_calls, scratch / "generated-github", env, origins
        )
        # The plain shell: curl on the REST API, jq keeping what our tools show.
        shell = Shell(scratch, env, origins)
        api = f'curl -sH "Authorization: Bearer $GITHUB_TOKEN" {fake.url}/repos/acme/widgets'
        shell.run(f"{api}/issues/1 | jq '{{title, state, user: .user.login, labels: [.labels[].name], body}}'")
        shell.run(f"{api}/issues/1/comments | jq '.[] | {{user: .user.login, created_at, body}}'")
        shell.run(
            f"{api}/pulls/46 | jq '{{title, state, user: .user.login, head: .head.label, base: .base.ref, body, "
            "commits, additions, deletions, changed_files, mergeable_state}'"
        )
        shell.run(f"{api}/pulls/46/files | jq -r '.[] | \"\\(.status) \\(.filename) +\\(.additions) -\\(.deletions)\"'")
        rows["shell (curl, jq)"] = {"calls": shell.spent}
        archived = (
            archived_anchor(
                npm_dir,
                ARCHIVED_GITHUB,
                {real: fake for fake, real in origins.items()},
                {"GITHUB_PERSONAL_ACCESS_TOKEN": module.TOKEN},
            )
            if anchors
            else None
        )
        if archived:
            # It has no tool for an issue's comments: the issue alone, then the pull request and its files.
            archived.call("get_issue", {"owner": "acme", "repo": "widgets", "issue_number": 1})
            archived.call("get_pull_request", {"owner": "acme", "repo": "widgets", "pull_number": 46})
            archived.call("get_pull_request_files", {"owner": "acme", "repo": "widgets", "pull_number": 46})
            archived.close()
            rows["archived server-github (MCP, anchor; no tool reads issue comments)"] = archived.row()
    finally:
        fake.stop()
    return rows


def _slack_calls(call: ToolCall) -> None:
    call("read_messages", {"channel": "#general"})
    call("search_messages", {"query": "deploy"})


def slack_tasks(anchors: bool, npm_dir: Path, scratch: Path) -> dict[str, dict[str, Any]]:
    module = module_at("tokens_fake_slack", ROOT / "packages/mcp-server-slack/tests/fake_slack.py")
    fake = module.FakeSlack()
    server = "mcp-server-slack"
    with fake.serve():
        origins = {fake.url.rstrip("/"): "https://slack.com/api"}
        token = scratch / "slack-token"
        token.write_text(module.BOT_TOKEN + "\n" + module.USER_TOKEN + "\n")
        argv = python_module("mcp_server_slack", "--token-file", str(token), "--api-url", fake.url)
        rows = _mcp_rows(server, argv, _slack_calls, {"MCP": "", **DYNAMIC}, origins=origins)
        cli = CommandTrack(argv, dict(os.environ), server, origins)
        cli.call("read_messages", "#general")
        cli.call("search_messages", "deploy")
        rows[f"{server} (CLI + Skill)"] = cli.row()
        rows |= _generated_cli_row(server, argv, _slack_calls, scratch / "generated-slack", origins=origins)
        # The plain shell: curl on the Web API, jq keeping each message's fields (authors stay user IDs).
        shell = Shell(scratch, {"SLACK_BOT_TOKEN": module.BOT_TOKEN, "SLACK_USER_TOKEN": module.USER_TOKEN}, origins)
        api = f'curl -sH "Authorization: Bearer $SLACK_BOT_TOKEN" "{fake.url.rstrip("/")}'
        general = shell.run(
            f"""{api}/conversations.list?limit=200" | jq -r '.channels[] | select(.name == "general") | .id'"""
        ).strip()
        shell.run(
            f"{api}/conversations.history?channel={general}&limit=50\" | jq -c '.messages[] | {{user, ts, text}}'"
        )
        shell.run(
            f'{api.replace("BOT", "USER")}/search.messages?query=deploy" '
            "| jq -c '.messages.matches[] | {channel: .channel.name, username, ts, text}'"
        )
        rows["shell (curl, jq)"] = {"calls": shell.spent}
        archived = (
            archived_anchor(
                npm_dir,
                ARCHIVED_SLACK,
                {real: fake for fake, real in origins.items()},
                {"SLACK_BOT_TOKEN": module.BOT_TOKEN, "SLACK_TEAM_ID": "T0FAKE"},  # the fake's team
            )
            if anchors
            else None
        )
        if archived:
            # It takes channel IDs only and has no search: its channel list (first page, its default size)
            # finds #general, then a page of history as long as ours (50).
            listing = archived.call("slack_list_channels", {})
            general = next(c["id"] for c in json.loads(listing)["channels"] if c["name"] == "general")
            archived.call("slack_get_channel_history", {"channel_id": general, "limit": 50})
            archived.close()
            rows["archived server-slack (MCP, anchor; no search tool)"] = archived.row()
    return rows


# --- schema floors ------------------------------------------------------------------------------------------


Floor = tuple[int, int] | None  # (tools, tokens); None where the server has no such mode


def floors(tmp: Path, anchors: bool, npm_dir: Path) -> list[tuple[str, list[Floor]]]:
    """Per server: (tools, tokens) at the default toolsets, with every toolset on, and in dynamic mode; then the
    anchors' one listing (none of them has toolsets). Listing tools sends no API request: GitHub and Slack get an
    address where nothing listens."""
    slack = module_at("tokens_fake_slack_floor", ROOT / "packages/mcp-server-slack/tests/fake_slack.py")
    token = tmp / "slack-floor-token"
    token.write_text(slack.BOT_TOKEN + "\n")
    launchers: dict[str, Callable[[list[str]], list[str]]] = {
        "mcp-server-filesystem": lambda extra: python_module("mcp_server_filesystem", str(tmp), *extra),
        "mcp-server-db": lambda extra: python_module("mcp_server_db", "--schema-poll-s", "0", *extra),
        "mcp-server-github": lambda extra: python_module(
            "mcp_server_github", "--api-url", "http://127.0.0.1:9", *extra
        ),
        "mcp-server-slack": lambda extra: python_module(
            "mcp_server_slack", "--token-file", str(token), "--api-url", "http://127.0.0.1:9", *extra
        ),
        "mcp-server-template": lambda extra: python_module(
            "mcp_server_template", "--notes-dir", str(tmp / "n"), *extra
        ),
    }
    rows: list[tuple[str, list[Floor]]] = []
    for name, launch in launchers.items():
        measured: list[Floor] = []
        for toolsets in ([], ["--toolsets", "all"], ["--toolsets", "dynamic"]):
            track = McpTrack(launch(toolsets))
            track.close()
            measured.append((track.tools, track.floor))
        rows.append((name, measured))
    if not anchors:
        return rows
    from mcp_server_db.database import sample_path

    sample = tmp / "sample.db"
    if not sample.exists():
        shutil.copy(sample_path(), sample)
    anchor_launchers: list[tuple[str, str, list[str], dict[str, str]]] = [
        # (row, npm package or "", argv after the entry point, environment)
        ("official server-filesystem (anchor)", "@modelcontextprotocol/server-filesystem", [str(tmp)], {}),
        ("archived server-github (anchor)", ARCHIVED_GITHUB, [], {}),
        ("archived server-slack (anchor)", ARCHIVED_SLACK, [], {"SLACK_BOT_TOKEN": "xoxb-0", "SLACK_TEAM_ID": "T0"}),
        # The same copy as the db tasks use: mcp-alchemy's descriptions name the database.
        (f"{ALCHEMY.replace('==', ' ')} (anchor)", "", [], {"DB_URL": f"sqlite:///{sample}"}),
    ]
    for name, package, args, env in anchor_launchers:
        entry = install_npm(npm_dir, package, "dist/index.js") if package else None
        if package and entry is None:
            continue
        argv = ["node", entry, *args] if entry else [*_uvx(), "--quiet", "--from", ALCHEMY, "mcp-alchemy"]
        track = McpTrack(argv, env)
        track.close()
        version = json.loads((Path(entry).parents[1] / "package.json").read_text())["version"] if entry else ""
        rows.append(
            (name.replace(" (", f" {version} (") if version else name, [(track.tools, track.floor), None, None])
        )
    return rows


def _uvx() -> list[str]:
    return [shutil.which("uvx") or sys.executable, *([] if shutil.which("uvx") else ["-m", "uv", "tool", "run"])]


def install_npm(into: Path, package: str, entry: str) -> str | None:
    path = into / "node_modules" / package / entry
    npm = shutil.which("npm")
    if path.exists() or npm is None:  # installed once a run: the floors and the tasks share it
        return str(path) if path.exists() else None
    done = subprocess.run(
        [npm, "install", "--prefix", str(into), "--no-audit", "--no-fund", package],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode or not path.exists():
        print(f"npm install {package} failed: {done.stderr[-300:]}", file=sys.stderr)
        return None
    return str(path)


# --- the report ---------------------------------------------------------------------------------------------


# The targets for the tokens a task set costs, against the plain shell doing the same.
MCP_TARGET, COMMAND_TARGET = 1.3, 1.1


def _total(row: dict[str, Any]) -> int:
    return int(row.get("floor", row.get("resident", 0)) + row.get("body", 0) + row["calls"])


def _targets(tasks: dict[str, dict[str, dict[str, Any]]]) -> list[str]:
    lines = [
        "## The issue's targets",
        "",
        f"Our MCP track <= {MCP_TARGET}× the plain shell's tokens and our command line + Skill <= {COMMAND_TARGET}×, "
        "on every task set.",
        "",
        "| task set | track | × shell | target | |",
        "|---|---|---:|---:|---|",
    ]
    for task, rows in tasks.items():
        shell = next((_total(r) for name, r in rows.items() if name.startswith("shell")), None)
        for name, row in rows.items():
            target = MCP_TARGET if "(MCP" in name else COMMAND_TARGET if "(CLI + Skill)" in name else None
            if not name.startswith("mcp-server-") or target is None or " via " in name:
                continue
            if shell is None:
                lines.append(f"| {task.split(':')[0]} | {name} | — | {target} | not measured: no shell track |")
                continue
            ratio = _total(row) / shell
            verdict = "met" if ratio <= target else "not met"
            lines.append(f"| {task.split(':')[0]} | {name} | {ratio:.2f} | {target} | {verdict} |")
    return lines


def render(tasks: dict[str, dict[str, dict[str, Any]]], floor_rows: list[tuple[str, list[Floor]]]) -> str:
    lines = [
        "# Tokens: MCP, command line + Skill, and the shell, for the same tasks",
        "",
        "`make bench-tokens` (bench/tokens.py); o200k_base, counted offline with bpe-openai on what the model sees.",
        "Rows marked anchor are other projects' servers in the same run; the archived GitHub and Slack servers run",
        "against the same fakes through bench/fetch_to_fake.cjs (a Node preload: they read no base-URL setting).",
        "`fastmcp generate-cli` rows: the script it writes for our server, and its SKILL.md (GitHub's from",
        "`--toolsets all`: every call of the script is a new session, so discovery cannot switch a toolset on).",
        "Dynamic rows (and GitHub's default row, whose toolsets, context and issues, lack get_pull_request) count",
        "list_toolsets and enable_toolset as calls and the schemas they switch on once, as read once.",
        "GitHub's and Slack's plain shell is curl on the API with jq keeping the fields our tools show. The archived",
        "Slack server takes channel IDs only: its first channel page (its default size, 100) finds #general.",
        "",
    ]
    if tasks:
        lines += [*_targets(tasks), ""]
    if floor_rows:
        lines += [
            "## Schema floor (tools/list: name + description + inputSchema)",
            "",
            "| server | default: tools | tokens | all toolsets: tools | tokens | dynamic: tools | tokens |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        lines += [
            f"| {name} | " + " | ".join(f"{m[0]} | {m[1]:,}" if m else "— | —" for m in measured) + " |"
            for name, measured in floor_rows
        ]
        lines.append("")
    for task, rows in tasks.items():
        shell = next((_total(r) for name, r in rows.items() if name.startswith("shell")), None)
        lines += [
            f"## {task}",
            "",
            "| track | resident (floor or skill) | read once (skill body; schemas mounted by discovery) | calls | total"
            " | × shell |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for name, row in rows.items():
            resident = row.get("floor", row.get("resident", 0))
            ratio = f"{_total(row) / shell:.2f}" if shell else "n/a"
            lines.append(
                f"| {name} | {resident:,} | {row.get('body', 0):,} | {row['calls']:,} | {_total(row):,} | {ratio} |"
            )
        lines.append("")
    return "\n".join(lines)


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
        npm = scratch / "npm"
        sections: dict[str, Callable[[], dict[str, dict[str, Any]]]] = {
            "filesystem: find a definition and read 30 lines; a tree to depth 2; one exact edit": lambda: (
                filesystem_tasks(source_tree(scratch), anchors, npm)
            ),
            "db: list tables, describe two, one aggregate query (bundled sample)": lambda: db_tasks(anchors, scratch),
            "github: read an issue with its comments; read a pull request with its files (fake API)": lambda: (
                github_tasks(anchors, npm, scratch)
            ),
            "slack: read a channel page; search (fake API)": lambda: slack_tasks(anchors, npm, scratch),
        }
        tasks = {title: run() for title, run in sections.items() if title.split(":")[0] in chosen}
        report = render(tasks, floors(scratch, anchors, npm) if "floors" in chosen else [])
    if options.only is None:
        Path(options.output).write_text(report)
    print(report)


if __name__ == "__main__":
    main()
