"""`make bench-http`: mcp-server-db over stateless Streamable HTTP under concurrent load, 1 and 2 workers.

The server runs as its own process (`python -m mcp_server_db --transport http --stateless --workers W` on the
bundled SQLite sample, read-only); this script is the client process on loopback. For each worker count W in
(1, 2) and each number of concurrent sessions N in (1, 16, 64), a fresh server starts, N sessions (one HTTP
connection each) initialize and then loop for a fixed time over a mix of one tools/list to three tools/call
of `run_query` on the sample, each call with its own parameter so a misrouted answer would show. Every answer
is checked: the right id, no JSON-RPC error, isError false, the expected rows. Reported per cell:
requests/s, p50/p95/p99 latency, errors (lost or wrong answers, which must be 0), and peak RSS (VmHWM) of each
worker process. Bounded: 6 cells of DURATION_S seconds plus start-up, well under 3 minutes. Writes
bench/results-http.md and exits 1 if any answer was lost or wrong, or a server process died.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import platform
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2

HERE = Path(__file__).parent
WORKERS = (1, 2)
SESSIONS = (1, 16, 64)
DURATION_S = 8.0
WARMUP_S = 1.0
MAX_REQUESTS_PER_SESSION = 20_000
PROTOCOL = "2025-11-25"
QUERY = "SELECT id, name FROM customers WHERE id = :id"


@dataclass
class Cell:
    workers: int
    sessions: int
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    elapsed: float = 0.0
    rss_kib: list[int] = field(default_factory=list)
    crashed: str = ""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as listing:
        return [int(child) for child in listing.read().split()]


def _peak_rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def _start_server(workers: int, port: int, extra: list[str] | None = None) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "mcp_server_db", "--transport", "http", "--stateless", "--port", str(port)]
    argv += ["--workers", str(workers), "--schema-poll-s", "0", "--log-level", "ERROR", *(extra or [])]
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the server exited: {process.stderr.read().decode() if process.stderr else ''}")
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.05)
    # The parent listens before its workers are ready: wait until each has built its server.
    if workers > 1:
        while len(_children(process.pid)) < workers and time.monotonic() < deadline:
            time.sleep(0.05)
    return process


def _stop_server(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _answer(response: httpx2.Response, request_id: int) -> dict[str, Any]:
    if response.status_code != 200:
        raise ValueError(f"HTTP {response.status_code}: {response.text[:200]}")
    message: dict[str, Any] = response.json()
    if message.get("id") != request_id:
        raise ValueError(f"answer to {message.get('id')!r}, expected {request_id}")
    if "error" in message:
        raise ValueError(f"error {message['error']}")
    result: dict[str, Any] = message["result"]
    return result


async def _session(url: str, number: int, cell: Cell, start: asyncio.Event, stop_at: list[float]) -> None:
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    async with httpx2.AsyncClient(headers=headers, timeout=30, limits=httpx2.Limits(max_connections=1)) as client:
        hello = {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "load", "version": "1"}}
        ids = itertools.count(1)
        init = {"jsonrpc": "2.0", "id": next(ids), "method": "initialize", "params": hello}
        _answer(await client.post(url, json=init), 1)
        client.headers["MCP-Protocol-Version"] = PROTOCOL
        await start.wait()
        for step in range(MAX_REQUESTS_PER_SESSION):
            now = time.perf_counter()
            if now >= stop_at[0]:
                return
            request_id = next(ids)
            customer = 1 + (number * 7 + step) % 50
            if step % 4 == 0:
                body: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": "tools/list"}
            else:
                arguments = {"sql": QUERY, "params": {"id": customer}}
                body = {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "method": "tools/call",
                    "params": {"name": "run_query", "arguments": arguments},
                }
            try:
                result = _answer(await client.post(url, json=body), request_id)
                if step % 4 == 0:
                    if "run_query" not in {tool["name"] for tool in result["tools"]}:
                        raise ValueError("tools/list without run_query")
                else:
                    rows = result["structuredContent"]["rows"]
                    if result["isError"] or len(rows) != 1 or rows[0][0] != customer:
                        raise ValueError(f"wrong rows for customer {customer}: {rows!r}")
            except (httpx2.HTTPError, ValueError, KeyError) as exc:
                cell.errors.append(f"{type(exc).__name__}: {exc}")
                continue
            if now >= stop_at[1]:  # past the warm-up
                cell.latencies.append(time.perf_counter() - now)


async def _drive(url: str, cell: Cell) -> None:
    start = asyncio.Event()
    stop_at = [float("inf"), float("inf")]
    tasks = [asyncio.create_task(_session(url, n, cell, start, stop_at)) for n in range(cell.sessions)]
    await asyncio.sleep(0.5)  # every session initialized
    began = time.perf_counter()
    stop_at[:] = [began + WARMUP_S + DURATION_S, began + WARMUP_S]
    start.set()
    for outcome in await asyncio.gather(*tasks, return_exceptions=True):
        if isinstance(outcome, BaseException):
            cell.errors.append(f"session failed: {outcome!r}")
    cell.elapsed = DURATION_S


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else float("nan")


def run_cell(workers: int, sessions: int, extra: list[str] | None = None) -> Cell:
    port = _free_port()
    process = _start_server(workers, port, extra)
    cell = Cell(workers, sessions)
    pids = _children(process.pid) if workers > 1 else [process.pid]
    try:
        asyncio.run(_drive(f"http://127.0.0.1:{port}/mcp", cell))
        if process.poll() is not None:
            cell.crashed = f"server exited {process.returncode}"
        elif workers > 1 and sorted(_children(process.pid)) != sorted(pids):
            cell.crashed = f"workers replaced: {pids} -> {_children(process.pid)}"
        cell.rss_kib = [_peak_rss_kib(pid) for pid in pids if os.path.exists(f"/proc/{pid}")]
    finally:
        _stop_server(process)
    stderr = process.stderr.read().decode(errors="replace") if process.stderr else ""
    if "Fatal Python error" in stderr or "Segmentation fault" in stderr:
        cell.crashed = cell.crashed or "a worker crashed"
    return cell


def render(cells: list[Cell]) -> str:
    cpu = platform.processor() or platform.machine()
    with open("/proc/cpuinfo") as info:
        models = [line.split(":", 1)[1].strip() for line in info if line.startswith("model name")]
    lines = [
        "# mcp-server-db over stateless Streamable HTTP under load",
        "",
        "`uv run python bench/http_load.py` (or `make bench-http`), "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {os.cpu_count()} CPUs "
        f"({models[0] if models else cpu}), Python {platform.python_version()}, client and "
        "server on one machine over loopback, the client one asyncio process with one connection per session.",
        f"Each cell: a fresh server on the bundled SQLite sample, {WARMUP_S:g} s warm-up, then {DURATION_S:g} s of "
        "1 tools/list : 3 tools/call `run_query` (one customer by id), every answer checked.",
        "",
        "| workers | sessions | requests/s | p50 ms | p95 ms | p99 ms | errors | peak RSS per worker (MiB) | server |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for cell in cells:
        rate = len(cell.latencies) / cell.elapsed if cell.elapsed else 0.0
        ms = [1000 * _percentile(cell.latencies, q) for q in (0.5, 0.95, 0.99)]
        rss = ", ".join(f"{kib / 1024:.0f}" for kib in cell.rss_kib)
        lines.append(
            f"| {cell.workers} | {cell.sessions} | {rate:,.0f} | {ms[0]:.1f} | {ms[1]:.1f} | {ms[2]:.1f} | "
            f"{len(cell.errors)} | {rss} | {cell.crashed or 'ok'} |"
        )
    lines += [
        "",
        "Requests/s counts answered and checked requests after the warm-up. Errors are lost or wrong answers",
        "(HTTP failure, JSON-RPC error, isError, wrong id or rows); the run fails if any is not 0. The client",
        "and the workers share the machine's CPUs, so two workers cannot double the throughput; one session",
        "is one connection, served by one worker (the other's peak RSS stays near its idle 117 MiB).",
        "",
    ]
    if any(cell.crashed for cell in cells):
        lines += [
            "A server that exited -11 died of SIGSEGV; one that exited 1 was the --workers parent giving up after",
            "its workers crashed repeatedly.",
            "",
        ]
    return "\n".join(lines)


OVERHEAD_ROUNDS = 5


def audit_overhead() -> int:
    """`--audit-overhead`: the same cell (1 worker, 16 sessions) with and without an audit log, taking turns,
    beside what the metrics cost per call in this process (they are always on over HTTP)."""
    import statistics
    import tempfile
    import timeit

    from mcp_server_core.operations.metrics import call_metrics

    rates: dict[str, list[float]] = {"off": [], "on": []}
    with tempfile.TemporaryDirectory() as folder:
        for round_ in range(OVERHEAD_ROUNDS):
            for mode in ("off", "on") if round_ % 2 == 0 else ("on", "off"):
                extra = ["--audit-log", f"{folder}/audit.jsonl"] if mode == "on" else []
                cell = run_cell(1, 16, extra)
                if cell.errors or cell.crashed:
                    print(f"audit {mode}: {cell.errors[:3]} {cell.crashed}", file=sys.stderr)
                    return 1
                rates[mode].append(len(cell.latencies) / cell.elapsed)
                print(f"audit {mode}: {rates[mode][-1]:.0f} requests/s", file=sys.stderr)
    metrics = call_metrics()
    per_call = (
        min(
            timeit.repeat(
                lambda: (metrics.started("tools/call"), metrics.finished("tools/call", "run_query", "ok", None, 0.002)),
                number=10_000,
                repeat=5,
            )
        )
        / 10_000
    )
    off, on = statistics.median(rates["off"]), statistics.median(rates["on"])
    report = "\n".join(
        [
            "# Audit and metrics overhead on the HTTP load cell",
            "",
            f"`uv run python bench/http_load.py --audit-overhead` on {platform.machine()}, {os.cpu_count()} cores, "
            f"{time.strftime('%Y-%m-%d')}: mcp-server-db, 1 worker, 16 sessions, {DURATION_S:g} s a cell, "
            f"{OVERHEAD_ROUNDS} rounds taking turns; medians.",
            "",
            "| audit log | requests/s |",
            "|---|---:|",
            f"| off | {off:.0f} |",
            f"| on (a file) | {on:.0f} |",
            f"| change | {(on - off) / off * 100:+.1f}% |",
            "",
            f"Metrics (always on over HTTP): {per_call * 1e6:.1f} µs per call to record, in-process "
            f"(prometheus-client, a counter, a histogram and a gauge), {per_call * off * 100:.2f}% of one core "
            f"at {off:.0f} requests/s.",
        ]
    )
    (HERE / "results-http-overhead.md").write_text(report + "\n")
    print(report)
    return 0


def main() -> int:
    if "--audit-overhead" in sys.argv[1:]:
        return audit_overhead()
    out = HERE / "results-http.md"
    started = time.monotonic()
    cells = []
    for workers in WORKERS:
        for sessions in SESSIONS:
            cell = run_cell(workers, sessions)
            cells.append(cell)
            print(
                f"workers={workers} sessions={sessions}: {len(cell.latencies)} requests, {len(cell.errors)} errors",
                file=sys.stderr,
            )
            for error in cell.errors[:5]:
                print(f"  {error}", file=sys.stderr)
    report = render(cells)
    out.write_text(report)
    print(report)
    print(f"total {time.monotonic() - started:.0f} s", file=sys.stderr)
    return 1 if any(cell.errors or cell.crashed for cell in cells) else 0


if __name__ == "__main__":
    sys.exit(main())
