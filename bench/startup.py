"""`make bench-startup`: cold start of every server beside bare FastMCP, a command and generate-cli's script.

    uv run python bench/startup.py [--spawns 10] [--only SERVER ...] [--output bench/results-startup.md]

Every source the servers import is compiled to bytecode first: these machines set PYTHONDONTWRITEBYTECODE=1, so
without it the workspace's own modules (installed editable) would be compiled at every start and the figure
would measure the compiler. Then, taking turns so drift hits all alike:
- cold start: spawn to the initialize answer over stdio, as a host starts a server, each server right beside a
  start of bare FastMCP (alternating which goes first): its ratio is the median of those pairs' ratios;
- a command: `mcp-server-X [options] call TOOL ...`, spawn to exit, the same trivial call as a command;
- the same call through the script `fastmcp generate-cli` writes for the server (bench/generated_cli.py), spawn to
  exit: it starts an MCP client and the server for every call.
GitHub and Slack run against the test suites' fake APIs. Writes bench/results-startup.md and prints it;
`--only` (e.g. `--only db`) measures those servers beside bare FastMCP and prints them without writing the report.
"""

from __future__ import annotations

import argparse
import compileall
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

from generated_cli import generate as generate_cli
from mcp_server_core.testing.modules import module_at
from mcp_server_core.testing.wire import StdioWire, python_module

HERE = Path(__file__).parent
ROOT = HERE.parent
SOURCES = [ROOT / "shared" / "src", *(ROOT / "packages").glob("*/src"), *(ROOT / "examples").glob("*/src"), HERE]


def cold_start(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    with StdioWire(argv, env=env) as wire:
        wire.initialize(timeout=60)
        return time.perf_counter() - started


def command(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, **env}, timeout=60, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode:
        raise RuntimeError(f"{argv[-3:]}: {done.stderr[-300:]}")
    return elapsed


class Server(NamedTuple):
    argv: list[str]
    env: dict[str, str]
    tool: str
    """A trivial call, the same on every track."""
    words: list[str]
    """The call as our command's words (after `call`)."""
    arguments: dict[str, Any]
    """The call as MCP arguments (the generated CLI's flags are made from them)."""


# The targets: a server's cold start against bare FastMCP's, a command against its own server's start.
START_TARGET, COMMAND_TARGET = 1.05, 0.5


def _verdict(ratio: float, target: float) -> str:
    return "met" if ratio <= target else "not met"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--spawns", type=int, default=10)
    parser.add_argument("--only", nargs="+", metavar="SERVER", help="e.g. db github: these beside bare FastMCP")
    parser.add_argument("--output", default=str(HERE / "results-startup.md"))
    options = parser.parse_args()
    for source in SOURCES:
        compileall.compile_dir(str(source), quiet=1)
    github = module_at("startup_fake_github", ROOT / "packages/mcp-server-github/tests/fake_github.py")
    slack = module_at("startup_fake_slack", ROOT / "packages/mcp-server-slack/tests/fake_slack.py")
    fake_github = github.FakeGitHub().start()
    fake_slack = slack.FakeSlack()
    with tempfile.TemporaryDirectory() as folder, fake_slack.serve():
        scratch = Path(folder)
        (scratch / "notes").mkdir()
        (scratch / "notes" / "groceries").write_text("milk\n")
        token = scratch / "slack-token"
        token.write_text(slack.BOT_TOKEN + "\n")
        bare = [sys.executable, str(HERE / "bare_server.py"), str(scratch / "notes")]
        servers = {
            "mcp-server-template": Server(
                python_module("mcp_server_template", "--notes-dir", str(scratch / "notes")),
                {},
                "read_note",
                ["groceries"],
                {"name": "groceries"},
            ),
            "mcp-server-filesystem": Server(
                python_module("mcp_server_filesystem", str(scratch)), {}, "show_tree", [], {}
            ),
            "mcp-server-db": Server(
                python_module("mcp_server_db", "--schema-poll-s", "0"),
                {},
                "run_query",
                ["SELECT 1"],
                {"sql": "SELECT 1"},
            ),
            "mcp-server-github": Server(
                python_module("mcp_server_github", "--api-url", fake_github.url),
                {"GITHUB_TOKEN": github.TOKEN},
                "get_me",
                [],
                {},
            ),
            "mcp-server-slack": Server(
                python_module("mcp_server_slack", "--token-file", str(token), "--api-url", fake_slack.url),
                {},
                "list_channels",
                ["--limit", "5"],
                {"limit": 5},
            ),
        }
        if options.only:
            servers = {name: spec for name, spec in servers.items() if name.removeprefix("mcp-server-") in options.only}
        generated = {
            name: generate_cli(name, server.argv, server.env, scratch / f"generated-{name}")
            for name, server in servers.items()
        }
        starts: dict[str, list[float]] = {name: [] for name in ["bare FastMCP", *servers]}
        calls: dict[str, list[float]] = {name: [] for name in servers}
        generated_calls: dict[str, list[float]] = {name: [] for name in servers}
        # Ratios are taken within a pair measured back to back (bare FastMCP and the server, in alternating
        # order; the command right after), so load from others on a shared machine hits both sides alike.
        versus_bare: dict[str, list[float]] = {name: [] for name in servers}
        versus_start: dict[str, list[float]] = {name: [] for name in servers}
        print(f"{options.spawns} rounds, the servers taking turns …", file=sys.stderr)
        for round_number in range(options.spawns):
            for name, server in servers.items():
                pair = [("bare FastMCP", bare, {}), (name, server.argv, server.env)]
                for who, argv, env in pair[:: -1 if round_number % 2 else 1]:
                    starts[who].append(cold_start(argv, env))
                versus_bare[name].append(starts[name][-1] / starts["bare FastMCP"][-1])
                calls[name].append(command([*server.argv, "call", server.tool, *server.words], server.env))
                versus_start[name].append(calls[name][-1] / starts[name][-1])
                cli = generated[name]
                generated_calls[name].append(
                    command([sys.executable, str(cli.script), *cli.argv(server.tool, server.arguments)], {})
                )
    fake_github.stop()
    median = {name: statistics.median(times) for name, times in starts.items()}
    lines = [
        "# Start-up: every server beside bare FastMCP, and the same server's command",
        "",
        f"`make bench-startup` (bench/startup.py) on {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, {time.strftime('%Y-%m-%d')}; bytecode compiled first; {options.spawns} "
        "rounds, the servers taking turns. Times are medians; each ratio is the median of ratios taken back to back "
        "(bare FastMCP and the server in alternating order, the command right after its server's start), as the "
        "machine is shared and its load drifts: compare figures within one run only.",
        "",
        f"The issue's targets: a server's cold start <= {START_TARGET}× bare FastMCP's in the same run; a command "
        f"<= {COMMAND_TARGET}× its server's cold start.",
        "",
        "| server | cold start to initialize | × bare FastMCP | target | a command (`call …`, to exit) "
        "| × its cold start | target |",
        "|---|---:|---:|---|---:|---:|---|",
        f"| bare FastMCP | {median['bare FastMCP'] * 1000:.0f} ms | 1.00 | | — | — | |",
    ]
    for name in servers:
        start, call = median[name], statistics.median(calls[name])
        to_bare, to_start = statistics.median(versus_bare[name]), statistics.median(versus_start[name])
        lines.append(
            f"| {name} | {start * 1000:.0f} ms | {to_bare:.2f} | {_verdict(to_bare, START_TARGET)} | "
            f"{call * 1000:.0f} ms | {to_start:.2f} | {_verdict(to_start, COMMAND_TARGET)} |"
        )
    lines += [
        "",
        "## One call through `fastmcp generate-cli`'s script beside our command",
        "",
        "The same server, tool and arguments, spawn to exit, in the same rounds. The generated script starts an MCP "
        "client and the server (over stdio) for every call; our command runs the tool in its own process.",
        "",
        "| server | call | our command | generated CLI (`call-tool …`) | ours ÷ generated |",
        "|---|---|---:|---:|---:|",
    ]
    for name, server in servers.items():
        ours, theirs = statistics.median(calls[name]), statistics.median(generated_calls[name])
        lines.append(
            f"| {name} | `{shlex.join([server.tool, *server.words])}` | {ours * 1000:.0f} ms | "
            f"{theirs * 1000:.0f} ms | {ours / theirs:.2f} |"
        )
    report = "\n".join(lines) + "\n"
    if not options.only:
        Path(options.output).write_text(report)
    print(report)


if __name__ == "__main__":
    main()
