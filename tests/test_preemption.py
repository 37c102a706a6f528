"""A call that holds its worker thread cannot take the server with it: `ping` is answered while a sync tool
spins in Python, and SIGTERM ends the process within its bound even while a tool holds the GIL in C (a
catastrophic `re` match), when no signal handler, timer or event loop of the server can run; such a call held
past the call deadline stops the server without any SIGTERM (nothing in it could be served any more). Real
processes, over stdio and HTTP, with the tools of `tests/gil_holding_server.py`."""

from __future__ import annotations

import contextlib
import itertools
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from mcp_server_core.testing import HttpWire, StdioWire, WireError, spawn_http_server
from mcp_server_core.transport.serving import EXIT_GRACE_S, WATCHDOG_GRACE_S

# The GIL holder burns a core until it is killed, and the exit is awaited against a bound: run alone.
pytestmark = pytest.mark.serial

SERVER = [sys.executable, str(Path(__file__).with_name("gil_holding_server.py"))]
EXIT_BOUND_S = 20.0
"""Far above the server's own bound (drain 1 s + exit grace 3 s + watchdog 2 s, HTTP 2 s more); without the
watchdog the process never exits (the match runs for hours)."""


def _wait_started(markers: Path) -> str:
    deadline = time.monotonic() + 30
    while not (markers / "started").exists():
        assert time.monotonic() < deadline, "the tool never started"
        time.sleep(0.02)
    return (markers / "started").read_text()


def test_ping_is_answered_while_a_sync_tool_spins(tmp_path: Path) -> None:
    with StdioWire([*SERVER, str(tmp_path)]) as wire:
        wire.initialize()
        wire.send({"jsonrpc": "2.0", "id": 41, "method": "tools/call", "params": {"name": "spin", "arguments": {}}})
        assert _wait_started(tmp_path) == "spin"
        assert wire.request("ping")["result"] == {}
        (tmp_path / "release").write_text("")
        assert wire.response_to(41)["result"]["isError"] is False


def test_sigusr2_writes_every_threads_stack_to_the_log_and_the_server_serves_on(tmp_path: Path) -> None:
    """An operator's (or a test's) look at where a server that seems stuck waits; it is no SIGTERM: the
    watchdog, which takes what the SIGTERM handler writes as the news of one, never hears of it."""
    with StdioWire([*SERVER, str(tmp_path), "--drain-timeout-s", "0"]) as wire:
        wire.initialize()
        stacks = wire.threads()
        assert "most recent call first" in stacks, stacks
        assert "in serve" in stacks, stacks
        # A watchdog that took it for a SIGTERM would kill within this (drain 0 s + exit grace + its own grace).
        time.sleep(EXIT_GRACE_S + WATCHDOG_GRACE_S + 1)
        assert wire.request("ping")["result"] == {}
        assert wire.close() == 0


def test_sigterm_ends_stdio_while_a_tool_holds_the_gil(tmp_path: Path) -> None:
    with StdioWire([*SERVER, str(tmp_path)]) as wire:
        wire.initialize()
        wire.send({"jsonrpc": "2.0", "id": 42, "method": "tools/call", "params": {"name": "hold_the_gil"}})
        assert _wait_started(tmp_path) == "hold_the_gil"
        wire.proc.send_signal(signal.SIGTERM)
        try:
            wire.proc.wait(timeout=EXIT_BOUND_S)
        except subprocess.TimeoutExpired:
            wire.proc.kill()
            pytest.fail(f"still running {EXIT_BOUND_S:g} s after SIGTERM")
        # The watchdog says why, with the threads as they were: the tool that held the GIL among them.
        assert "after SIGTERM" in wire.stderr, wire.stderr[-2000:]
        assert "hold_the_gil" in wire.stderr


def test_sigterm_ends_http_while_a_tool_holds_the_gil(tmp_path: Path) -> None:
    with (
        (tmp_path / "log").open("w+b") as log,
        spawn_http_server([*SERVER, str(tmp_path)], log=log) as (url, process),
    ):

        def call() -> None:
            with contextlib.suppress(Exception), HttpWire(url) as wire:  # killed under it: that is the point
                wire.initialize()
                wire.request("tools/call", {"name": "hold_the_gil", "arguments": {}})

        threading.Thread(target=call, daemon=True).start()
        assert _wait_started(tmp_path) == "hold_the_gil"
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=EXIT_BOUND_S)
        except subprocess.TimeoutExpired:
            process.kill()
            pytest.fail(f"still running {EXIT_BOUND_S:g} s after SIGTERM")
        log.seek(0)
        said = log.read().decode(errors="replace")
    assert "after SIGTERM" in said, said[-2000:]
    assert "hold_the_gil" in said


def test_a_call_holding_the_gil_past_the_call_deadline_stops_the_server(tmp_path: Path) -> None:
    """No deadline, ping or cancel can run while a call holds the GIL: past the call deadline (1 s) and the
    watchdog's grace (5 s), the server is sent SIGTERM, and killed at the end of its drain bound."""
    argv = [*SERVER, str(tmp_path), "--call-timeout-s", "1", "--drain-timeout-s", "0"]
    with StdioWire(argv) as wire:
        wire.initialize()
        # On a busy machine the worker thread may not get its turn within the 1 s deadline: the call is then
        # abandoned before the tool starts (answered with a timeout), and asked again.
        for attempt in itertools.count(43):
            wire.send({"jsonrpc": "2.0", "id": attempt, "method": "tools/call", "params": {"name": "hold_the_gil"}})
            while not (tmp_path / "started").exists():
                try:
                    wire.response_to(attempt, timeout=0.05)
                except WireError:  # no answer yet
                    continue
                break  # answered: it never started
            if (tmp_path / "started").exists():
                break
            assert attempt < 43 + 20, "the tool never started"
        try:
            wire.proc.wait(timeout=EXIT_BOUND_S + 10)
        except subprocess.TimeoutExpired:
            wire.proc.kill()
            pytest.fail("a call holding the GIL kept the server for ever")
        assert "no turn of the event loop for 6 s" in wire.stderr, wire.stderr[-2000:]
        assert "hold_the_gil" in wire.stderr
