"""`make bench-startup`: cold start of every server beside bare FastMCP, and a command-line call, in one run.

    uv run python bench/startup.py [--spawns 10] [--only SERVER ...] [--output bench/results-startup.md]

Every source the servers import is compiled to bytecode first: these machines set PYTHONDONTWRITEBYTECODE=1, so
without it the workspace's own modules (installed editable) would be compiled at every start and the figure
would measure the compiler. Then, taking turns so drift hits all alike:
- cold start: spawn to the initialize answer over stdio, as a host starts a server (median of the spawns);
- a command: `mcp-server-X [options] call TOOL ...`, spawn to exit, the same trivial call as a command.
GitHub and Slack run against the test suites' fake APIs. Writes bench/results-startup.md and prints it;
`--only` (e.g. `--only db`) measures those servers beside bare FastMCP and prints them without writing the report.
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp_server_core.testing.wire import StdioWire, python_module

HERE = Path(__file__).parent
ROOT = HERE.parent
SOURCES = [ROOT / "shared" / "src", *(ROOT / "packages").glob("*/src"), *(ROOT / "examples").glob("*/src"), HERE]


def _load(name: str, path: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, ROOT / path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--spawns", type=int, default=10)
    parser.add_argument("--only", nargs="+", metavar="SERVER", help="e.g. db github: these beside bare FastMCP")
    parser.add_argument("--output", default=str(HERE / "results-startup.md"))
    options = parser.parse_args()
    for folder in SOURCES:
        compileall.compile_dir(str(folder), quiet=1)
    github = _load("startup_fake_github", "packages/mcp-server-github/tests/fake_github.py")
    slack = _load("startup_fake_slack", "packages/mcp-server-slack/tests/fake_slack.py")
    fake_github = github.FakeGitHub().start()
    fake_slack = slack.FakeSlack()
    with tempfile.TemporaryDirectory() as folder, fake_slack.serve():
        scratch = Path(folder)
        (scratch / "notes").mkdir()
        (scratch / "notes" / "groceries").write_text("milk\n")
        token = scratch / "slack-token"
        token.write_text(slack.BOT_TOKEN + "\n")
        gh_env = {"GITHUB_TOKEN": github.TOKEN}
        servers: dict[str, tuple[list[str], dict[str, str], list[str]]] = {
            # name: (argv, environment, a trivial call as command words)
            "bare FastMCP": ([sys.executable, str(HERE / "bare_server.py"), str(scratch / "notes")], {}, []),
            "mcp-server-template": (
                python_module("mcp_server_template", "--notes-dir", str(scratch / "notes")),
                {},
                ["read_note", "groceries"],
            ),
            "mcp-server-filesystem": (python_module("mcp_server_filesystem", str(scratch)), {}, ["show_tree"]),
            "mcp-server-db": (python_module("mcp_server_db", "--schema-poll-s", "0"), {}, ["run_query", "SELECT 1"]),
            "mcp-server-github": (
                python_module("mcp_server_github", "--api-url", fake_github.url),
                gh_env,
                ["get_me"],
            ),
            "mcp-server-slack": (
                python_module("mcp_server_slack", "--token-file", str(token), "--api-url", fake_slack.url),
                {},
                ["list_channels", "--limit", "5"],
            ),
        }
        if options.only:
            servers = {
                name: spec
                for name, spec in servers.items()
                if name == "bare FastMCP" or name.removeprefix("mcp-server-") in options.only
            }
        starts: dict[str, list[float]] = {name: [] for name in servers}
        calls: dict[str, list[float]] = {name: [] for name, (_, _, words) in servers.items() if words}
        print(f"{options.spawns} rounds, the servers taking turns …", file=sys.stderr)
        for _ in range(options.spawns):
            for name, (argv, env, words) in servers.items():
                starts[name].append(cold_start(argv, env))
                if words:
                    calls[name].append(command([*argv, "call", *words], env))
    fake_github.stop()
    bare = statistics.median(starts["bare FastMCP"])
    lines = [
        "# Start-up: every server beside bare FastMCP, and the same server's command",
        "",
        f"`make bench-startup` (bench/startup.py) on {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, {time.strftime('%Y-%m-%d')}; bytecode compiled first; median of "
        f"{options.spawns}, the servers taking turns.",
        "",
        "| server | cold start to initialize | × bare FastMCP | a command (`call …`, to exit) | × its cold start |",
        "|---|---:|---:|---:|---:|",
    ]
    for name in servers:
        start = statistics.median(starts[name])
        call = f"{statistics.median(calls[name]) * 1000:.0f} ms" if name in calls else "—"
        ratio = f"{statistics.median(calls[name]) / start:.2f}" if name in calls else "—"
        lines.append(f"| {name} | {start * 1000:.0f} ms | {start / bare:.2f} | {call} | {ratio} |")
    report = "\n".join(lines) + "\n"
    if not options.only:
        Path(options.output).write_text(report)
    print(report)


if __name__ == "__main__":
    main()
