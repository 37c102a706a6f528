"""What a server's stdio start pays for, seen from inside the process as a host starts it.

No timing here (speed belongs to `make bench-startup`): the server runs as `python -m mcp_server_X`, answers
the handshake over stdio, and on exit reports what it loaded and when the cyclic collector ran.
- Serving over stdio loads no HTTP, auth, metrics or tracing-SDK code: those serve paths not taken.
- A server of a web service loads that service's client library at its first call to it, not to start: the
  handshake and tools/list need none (a command loads it while it opens its toolsets).
- No collection runs while fastmcp loads and the server is built, nor while a command loads its domain; once
  serving, or running the command's tool, the collector runs again with what start-up made frozen out of it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp_server_core.testing import StdioWire

from tests.conftest import SERVERS

NOT_ON_STDIO = (
    "mcp_server_core.transport.http",  # the Streamable HTTP app and its guards
    "mcp_server_core.transport.front",  # the HTTP front door's timeouts
    "mcp_server_core.auth.tokens",  # bearer tokens and JWTs
    "fastmcp.server.auth.providers.jwt",
    "fastmcp.server.event_store",  # resumable SSE streams
    "uvicorn.protocols.http.h11_impl",
    "h11",
    "prometheus_client",  # /metrics, HTTP only
    "opentelemetry.sdk",  # only when OTEL_* asks for traces
)

FIRST_USE = {
    "github": ("github", "requests", "urllib3"),  # PyGithub and its HTTP stack: mcp_server_github/transport.py
    "slack": ("slack_sdk",),  # mcp_server_slack/transport.py
}
"""Each web service's client library, loaded at the server's first call to the service."""
CLIENTS = sorted(name for names in FIRST_USE.values() for name in names)

LOADING = ("fastmcp", "sqlalchemy", "slack_sdk")
"""Modules whose loading makes collections when nothing pauses them: fastmcp for any server, SQLAlchemy for a
database command and slack-sdk for a Slack one (the template's own domain is too small to make one)."""

# Runs the server as `python -m` would, noting in order each collection's start and the moment start-up's heap
# is frozen (cli.run freezes it as serving begins or the command's tool runs), each with which of LOADING were
# loaded then. The report goes to stderr at exit.
PROBE = f"""
import gc, json, runpy, sys
events = []
def loading():
    return [name for name in {LOADING!r} if name in sys.modules]
def seen(phase, info):
    if phase == "start":
        events.append(["collect", loading()])
freeze = gc.freeze
def noted_freeze():
    events.append(["freeze", loading()])
    freeze()
gc.freeze = noted_freeze
gc.callbacks.append(seen)
module, sys.argv = sys.argv[1], sys.argv[1:]
try:
    runpy.run_module(module, run_name="__main__", alter_sys=True)
finally:
    gc.callbacks.remove(seen)
    report = {{
        "loaded": [name for name in {NOT_ON_STDIO!r} if name in sys.modules],
        "clients": sorted({{name.split(".")[0] for name in sys.modules}} & set({CLIENTS!r})),
        "events": events,
        "collecting": gc.isenabled(),
    }}
    print("STARTUP " + json.dumps(report), file=sys.stderr)
"""


def _started(server: str, tmp_path: Path) -> dict[str, Any]:
    argv = SERVERS[server](tmp_path)
    module_at = argv.index("-m") + 1
    with StdioWire([sys.executable, "-c", PROBE, *argv[module_at:]]) as wire:
        assert "serverInfo" in wire.initialize()["result"]
        wire.notify("notifications/initialized")
        assert wire.request("tools/list")["result"]["tools"]
        assert wire.close() == 0, wire.stderr[-2000:]
        lines = [line for line in wire.stderr.splitlines() if line.startswith("STARTUP ")]
    assert lines, wire.stderr[-2000:]
    report: dict[str, Any] = json.loads(lines[-1].removeprefix("STARTUP "))
    return report


@pytest.mark.parametrize("server", sorted(SERVERS))
def test_serving_over_stdio_loads_no_http_auth_metrics_or_tracing_sdk(server: str, tmp_path: Path) -> None:
    assert _started(server, tmp_path)["loaded"] == []


@pytest.mark.parametrize("server", sorted(FIRST_USE))
def test_serving_loads_the_services_client_at_the_first_call_not_to_start(server: str, tmp_path: Path) -> None:
    assert _started(server, tmp_path)["clients"] == []


def _paused_while_loading(report: dict[str, Any], module: str) -> None:
    """`module` loaded with no collection on the way, and start-up frozen only once it had."""
    events = report["events"]
    frozen_at = [i for i, (kind, _) in enumerate(events) if kind == "freeze"]
    assert len(frozen_at) == 1, events
    assert module in events[frozen_at[0]][1], "the collector resumed before start-up was over"
    assert [e for e in events[: frozen_at[0]] if module in e[1]] == [], "collections while start-up loaded"
    assert report["collecting"] is True


@pytest.mark.parametrize("server", sorted(SERVERS))
def test_the_collector_waits_out_start_up_and_runs_while_serving(server: str, tmp_path: Path) -> None:
    _paused_while_loading(_started(server, tmp_path), "fastmcp")


@pytest.mark.parametrize(
    ("server", "command", "answer", "domain"),
    [
        ("db", ["run_query", "SELECT 6 * 7 AS answer"], "42", "sqlalchemy"),
        ("slack", ["list_channels"], "#general", "slack_sdk"),
    ],
)
def test_a_command_loads_its_domain_without_collections_and_runs_its_tool_collecting(
    server: str, command: list[str], answer: str, domain: str, tmp_path: Path
) -> None:
    argv = SERVERS[server](tmp_path)
    module_at = argv.index("-m") + 1
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv[module_at:], "call", *command],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert answer in done.stdout
    report = json.loads(done.stderr.split("STARTUP ")[-1])
    assert "fastmcp" not in json.dumps(report["events"])
    _paused_while_loading(report, domain)
