"""Stateless Streamable HTTP from several worker processes on one port.

Many clients at once, both protocol eras, tools/list and tools/call: every answer right, and both workers
doing the work; a burst of connections spread over them. A worker that dies is replaced; SIGTERM stops them
all and exits 0; a second server on the port is refused; sessions without --stateless are refused with
several workers, since nothing routes a session back to its process.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from mcp_server_core.testing import HttpWire, StdioWire, python_module, spawn_http_server

from tests.conftest import SERVERS

# Deadlines and latencies are measured here: run alone, after the parallel phase (`make pytest`).
pytestmark = pytest.mark.serial

CALLS = 240
CLIENTS = 16
"""Concurrent clients: more than the five threads at which SQLite on SingletonThreadPool crashed a worker."""


def _children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as listing:
        return [int(child) for child in listing.read().split()]


def _cpu_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def _wait_for_workers(pid: int, count: int) -> list[int]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        children = _children(pid)
        if len(children) == count:
            return children
        time.sleep(0.1)
    raise AssertionError(f"expected {count} workers, found {_children(pid)}")


@pytest.fixture
def two_workers() -> Iterator[tuple[str, Any]]:
    argv = python_module("mcp_server_db", "--stateless", "--workers", "2", "--schema-poll-s", "0")
    with spawn_http_server(argv) as (url, process):
        _wait_for_workers(process.pid, 2)
        yield url, process


def _one_call(url: str, n: int) -> tuple[int, bool]:
    """Call n: a fresh connection each, alternating eras and methods; (n, answered right)."""
    with HttpWire(url) as wire:
        if n % 2:
            wire.protocol_version = "2025-11-25"  # handshake era, stateless: no session needed
            request = wire.request
        else:
            request = wire.modern_request
        if n % 3 == 0:
            tools = request("tools/list")["result"]["tools"]
            return n, "run_query" in {tool["name"] for tool in tools}
        answer = request(
            "tools/call", {"name": "run_query", "arguments": {"sql": "SELECT :n AS n", "params": {"n": n}}}
        )
        result = answer["result"]
        return n, result["isError"] is False and result["structuredContent"]["rows"] == [[n]]


def test_many_concurrent_calls_across_two_workers_all_answer_right(two_workers: tuple[str, Any]) -> None:
    url, process = two_workers
    workers = _children(process.pid)
    before = {pid: _cpu_ticks(pid) for pid in workers}
    with ThreadPoolExecutor(CLIENTS) as pool:
        outcomes = list(pool.map(lambda n: _one_call(url, n), range(CALLS)))
    assert [n for n, right in outcomes if not right] == []
    assert sorted(n for n, _ in outcomes) == list(range(CALLS))
    work = {pid: _cpu_ticks(pid) - before[pid] for pid in workers}
    assert all(ticks > 0 for ticks in work.values()), f"a worker did no work: {work}"
    assert process.poll() is None


def test_a_dead_worker_is_replaced_and_service_goes_on(two_workers: tuple[str, Any]) -> None:
    url, process = two_workers
    victim, survivor = _children(process.pid)
    os.kill(victim, signal.SIGKILL)
    replaced = _wait_for_workers_without(process.pid, victim)
    assert survivor in replaced
    assert len(replaced) == 2
    for n in range(20):
        assert _one_call(url, n)[1]


def _wait_for_workers_without(pid: int, gone: int) -> list[int]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        children = _children(pid)
        if gone not in children and len(children) == 2:
            return children
        time.sleep(0.1)
    raise AssertionError(f"worker {gone} was not replaced: {_children(pid)}")


def test_sigterm_stops_every_worker_and_exits_0(two_workers: tuple[str, Any]) -> None:
    url, process = two_workers
    workers = _children(process.pid)
    assert _one_call(url, 1)[1]
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=30) == 0
    for pid in workers:
        assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()


def test_several_workers_need_stateless(tmp_path: Path) -> None:
    argv = [*SERVERS["db"](tmp_path), "--transport", "http", "--workers", "2"]
    with StdioWire(argv) as wire:
        assert wire.proc.wait(timeout=30) == 2
        assert "--stateless" in wire.stderr
        assert "Mcp-Session-Id" in wire.stderr or "session" in wire.stderr


def test_a_port_in_use_is_refused_before_any_worker_starts(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        argv = [*SERVERS["db"](tmp_path), "--transport", "http", "--stateless", "--workers", "2", "--port", str(port)]
        with StdioWire(argv) as wire:
            assert wire.proc.wait(timeout=30) == 2
            assert f"cannot listen on 127.0.0.1:{port}" in wire.stderr


def test_a_second_copy_on_the_same_port_is_refused_not_joined(two_workers: tuple[str, Any], tmp_path: Path) -> None:
    """The workers' listeners share the port by SO_REUSEPORT; a second server started by mistake on it must not
    quietly take half its connections."""
    url, process = two_workers
    port = urlsplit(url).port
    argv = [*SERVERS["db"](tmp_path), "--transport", "http", "--stateless", "--workers", "2", "--port", str(port)]
    with StdioWire(argv) as wire:
        assert wire.proc.wait(timeout=30) == 2
        assert f"cannot listen on 127.0.0.1:{port}" in wire.stderr
    assert _one_call(url, 1)[1]
    assert process.poll() is None


ESTABLISHED, LISTENING = "01", "0A"


def _sockets_on(pid: int, port: int, state: str) -> int:
    """Sockets on local `port` in TCP `state` that process `pid` holds (its socket inodes, looked up in the
    kernel's TCP table)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(table) as rows:
            for row in list(rows)[1:]:
                fields = row.split()
                local_port, inode = int(fields[1].rsplit(":", 1)[1], 16), fields[9]
                count += local_port == port and fields[3] == state and inode in inodes
    return count


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the kernel spreads connections on Linux only")
def test_connections_opened_at_once_are_spread_over_the_workers(two_workers: tuple[str, Any]) -> None:
    """A gateway opens its keep-alive connections in a burst. On one shared socket the worker that woke first
    accepted all 32; each worker's own SO_REUSEPORT listener gets its share (by hash of the client port:
    fewer than 5 of 32 on one side happens once in 50,000 runs)."""
    url, process = two_workers
    workers = _children(process.pid)
    parts = urlsplit(url)
    assert parts.hostname is not None
    assert parts.port is not None
    deadline = time.monotonic() + 10
    while not all(_sockets_on(pid, parts.port, LISTENING) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.05)  # each worker opens its listener just after the fork
    connections = [socket.create_connection((parts.hostname, parts.port), timeout=10) for _ in range(32)]
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            accepted = {pid: _sockets_on(pid, parts.port, ESTABLISHED) for pid in workers}
            if sum(accepted.values()) >= 32:
                break
            time.sleep(0.05)
        assert sum(accepted.values()) == 32, accepted
        assert min(accepted.values()) >= 5, f"connections per worker: {accepted}"
    finally:
        for connection in connections:
            connection.close()
    assert _one_call(url, 2)[1]


def test_a_broken_jwks_file_is_refused_before_any_worker_starts(tmp_path: Path) -> None:
    (tmp_path / "jwks.json").write_text("{not json")
    argv = [*SERVERS["db"](tmp_path), "--transport", "http", "--stateless", "--workers", "2"]
    with StdioWire([*argv, "--jwks-file", str(tmp_path / "jwks.json"), "--jwt-issuer", "https://id.example"]) as wire:
        assert wire.proc.wait(timeout=30) == 2
        assert "JWKS file" in wire.stderr


def test_a_worker_answers_without_nagle_delays(two_workers: tuple[str, Any]) -> None:
    """Sequential calls on one keep-alive connection: each answer is written in two sends (head, body), and
    without TCP_NODELAY on the shared socket's connections every one waited ~40 ms for a delayed ACK."""
    url, _process = two_workers
    with HttpWire(url) as wire:
        latencies = []
        for _ in range(30):
            started = time.perf_counter()
            assert wire.modern_request("tools/list")["result"]["tools"]
            latencies.append(time.perf_counter() - started)
    latencies.sort()
    assert latencies[len(latencies) // 2] < 0.030, f"median {latencies[len(latencies) // 2] * 1000:.0f} ms"
