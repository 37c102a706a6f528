"""What a server's stdio start pays for, seen from inside the process as a host starts it.

No timing here (speed belongs to `make bench-startup`): the server runs as `python -m mcp_server_X`, answers
the handshake over stdio, and on exit reports what it loaded and when the cyclic collector ran.
- Serving over stdio loads no HTTP, auth, metrics or tracing-SDK code: those serve paths not taken.
- No collection runs while fastmcp loads and the server is built; once serving, the collector runs again,
  with what start-up made frozen out of it (cli.run).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from mcp_server_core.testing import StdioWire

from tests.conftest import SERVERS

NOT_ON_STDIO = (
    "mcp_server_core.http",  # the Streamable HTTP app and its guards
    "mcp_server_core.front",  # the HTTP front door's timeouts
    "mcp_server_core.auth",  # bearer tokens and JWTs
    "fastmcp.server.auth.providers.jwt",
    "fastmcp.server.event_store",  # resumable SSE streams
    "uvicorn.protocols.http.h11_impl",
    "h11",
    "prometheus_client",  # /metrics, HTTP only
    "opentelemetry.sdk",  # only when OTEL_* asks for traces
)

# Runs the server as `python -m` would, recording each collection's start: was fastmcp loaded yet, and was
# start-up's heap frozen yet (cli.run freezes it as serving begins). The report goes to stderr at exit.
PROBE = f"""
import gc, json, runpy, sys
collections = []
def seen(phase, info):
    if phase == "start":
        collections.append(["fastmcp" in sys.modules, gc.get_freeze_count() > 0])
gc.callbacks.append(seen)
module, sys.argv = sys.argv[1], sys.argv[1:]
try:
    runpy.run_module(module, run_name="__main__", alter_sys=True)
finally:
    gc.callbacks.remove(seen)
    report = {{
        "loaded": [name for name in {NOT_ON_STDIO!r} if name in sys.modules],
        "collections": collections,
        "collecting": gc.isenabled(),
        "frozen": gc.get_freeze_count(),
    }}
    print("STARTUP " + json.dumps(report), file=sys.stderr)
"""


def _started(server: str, tmp_path: Path) -> dict[str, object]:
    argv = SERVERS[server](tmp_path)
    module_at = argv.index("-m") + 1
    with StdioWire([sys.executable, "-c", PROBE, *argv[module_at:]]) as wire:
        assert "serverInfo" in wire.initialize()["result"]
        wire.notify("notifications/initialized")
        assert wire.request("tools/list")["result"]["tools"]
        assert wire.close() == 0, wire.stderr[-2000:]
        lines = [line for line in wire.stderr.splitlines() if line.startswith("STARTUP ")]
    assert lines, wire.stderr[-2000:]
    report: dict[str, object] = json.loads(lines[-1].removeprefix("STARTUP "))
    return report


@pytest.mark.parametrize("server", ["template", "filesystem", "slack"])
def test_serving_over_stdio_loads_no_http_auth_metrics_or_tracing_sdk(server: str, tmp_path: Path) -> None:
    assert _started(server, tmp_path)["loaded"] == []


@pytest.mark.parametrize("server", ["template", "filesystem", "slack"])
def test_the_collector_waits_out_start_up_and_runs_while_serving(server: str, tmp_path: Path) -> None:
    report = _started(server, tmp_path)
    collections = report["collections"]
    assert isinstance(collections, list)
    # Loading fastmcp alone triggers dozens of collections when nothing pauses them.
    assert [c for c in collections if c == [True, False]] == []
    assert report["collecting"] is True
    assert isinstance(report["frozen"], int)
    assert report["frozen"] > 10_000  # the modules, classes and schemas start-up made
