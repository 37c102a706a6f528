"""`make bench-http`: mcp-server-db over stateless Streamable HTTP under concurrent load, 1 and 2 workers.

The server runs as its own process (`python -m mcp_server_db --transport http --stateless --workers W` on the
bundled SQLite sample, read-only); this script is the client process on loopback. For each worker count W in
(1, 2) and each number of concurrent sessions N in (1, 16, 64), a fresh server starts, N sessions (one HTTP
connection each) initialize and then loop for a fixed time over a mix of one tools/list to three tools/call
of `run_query` on the sample, each call with its own parameter so a misrouted answer would show. Every answer
is checked: the right id, no JSON-RPC error, isError false, the expected rows. Reported per cell:
requests/s, p50/p95/p99 latency, errors (lost or wrong answers, which must be 0), and peak RSS (VmHWM) of each
worker process. Then the same cells through nginx (round robin, deploy/nginx.conf's upstream): one host, one host
with `--state-url` to a redis-server the bench starts, two hosts (separate server processes on separate ports) with
it; skipped, with the reason printed, when nginx or redis-server is missing. Then what the audit log and tracing
cost (`operations_overhead`): both off, both on (every span kept), and both on with a tenth of the traces sampled;
single-session sequential latency over interleaved rounds, the server's CPU per call, and the 16-session
throughput, the arms taking turns. Bounded: 21 cells of DURATION_S
seconds, 9 more through nginx, 45 rounds of LATENCY_CALLS calls, plus start-ups: about 8 minutes. Writes
bench/results-http.md and exits 1 if any answer was lost or wrong, or a server process died. `--overhead-only`
prints the overhead rows alone and `--gateway-only` the rows through nginx alone; neither writes anything.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

import httpx2
from mcp_server_core.testing import (
    NGINX,
    REDIS_SERVER,
    free_port,
    nginx,
    python_module,
    redis_server,
    spawn_http_server,
)

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
    setup: str = ""
    """What answered, when not `workers` processes of one server on its own port: e.g. nginx, 2 hosts, Redis."""
    served: list[int] = field(default_factory=list)
    """Through nginx: the tools/call each host answered (its /metrics), warm-up included."""

    @property
    def label(self) -> str:
        return self.setup or f"{self.workers} worker{'s' if self.workers > 1 else ''}"


def _children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as listing:
        return [int(child) for child in listing.read().split()]


def _peak_rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


@contextlib.contextmanager
def _server(
    workers: int, extra: list[str] | None = None, env: dict[str, str] | None = None, log: IO[bytes] | None = None
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """mcp-server-db with `workers` workers, once each has built its server; its endpoint URL and the process."""
    argv = python_module("mcp_server_db", "--stateless", "--workers", str(workers), "--schema-poll-s", "0")
    argv += ["--log-level", "ERROR", *(extra or [])]
    # Every session here is the same client to the server (no token: all are `local`), where in use each would be
    # its own: its per-client limits are raised to what 64 clients would have (4 running, 32 waiting, each).
    argv += ["--max-calls-per-client", "256", "--max-queued-calls-per-client", "2048"]
    with spawn_http_server(argv, env=env, log=log) as (url, process):
        # The parent listens before its workers are ready: wait until each has built its server.
        if workers > 1:
            _wait_until(lambda: len(_children(process.pid)) >= workers, f"fewer than {workers} workers", 60)
        yield url, process


GATEWAY_SETUPS = ((1, False), (1, True), (2, True))
"""Through nginx: one host (what nginx costs), one host with Redis (what Redis costs), two hosts with Redis (what
a second host gives): (hosts, Redis)."""
UPSTREAM = """
    upstream mcp_any {{
{servers}
        keepalive 16;
    }}
"""
LOCATION = """
        client_max_body_size 8m;
        location /mcp {
            proxy_pass http://mcp_any/mcp;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $host;
            proxy_buffering off;
            proxy_read_timeout 300s;
            proxy_next_upstream error timeout;
        }
"""
"""deploy/nginx.conf's `mcp_any` upstream and `location /mcp`, every request round robin: the hosts run
`--stateless`, so no request needs the host of an earlier one (the recipe's ip_hash route is for handshake-era
sessions, and would send every request of this one-address client to one host)."""


def _wait_until(condition: Callable[[], bool], failure: str, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(failure)
        time.sleep(0.05)


@contextlib.contextmanager
def _gateway(folder: Path, hosts: list[str]) -> Iterator[str]:
    """nginx in front of the hosts (their endpoint URLs), round robin; the URL of its /mcp."""
    servers = "\n".join(f"        server {urlsplit(host).netloc};" for host in hosts)
    with nginx(LOCATION, http=UPSTREAM.format(servers=servers), folder=folder) as base:
        yield f"{base}/mcp"


def _answered(url: str) -> int:
    """The tools/call a host answered, from its /metrics (the mcp_requests counter counts tool calls)."""
    text = httpx2.get(url.removesuffix("/mcp") + "/metrics", timeout=10).text
    return round(
        sum(
            float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line.startswith('mcp_requests_total{method="tools/call"')
        )
    )


def gateway_missing() -> str:
    """Why the rows through nginx cannot run here, or "" when they can."""
    missing = [name for name, path in (("nginx", NGINX), ("redis-server", REDIS_SERVER)) if path is None]
    return f"{' and '.join(missing)} not installed (apt-get install nginx-light redis-server)" if missing else ""


def run_gateway_cell(hosts: int, with_redis: bool, sessions: int) -> Cell:
    """`hosts` servers (1 worker each, each its own port and process, as separate machines would run them), each
    with `--state-url` to one redis-server when `with_redis`, behind nginx round robin; the same load as a cell."""
    setup = f"nginx, {hosts} host{'s' if hosts > 1 else ''}{', Redis' if with_redis else ''}"
    cell = Cell(1, sessions, setup=setup)
    with tempfile.TemporaryDirectory() as folder, contextlib.ExitStack() as stack:
        extra = []
        if with_redis:
            redis_port = free_port()
            stack.enter_context(redis_server(redis_port))  # its own, nothing kept on disk; stopped at the end
            extra = ["--state-url", f"redis://127.0.0.1:{redis_port}/0"]
        started = [stack.enter_context(_server(1, extra)) for _ in range(hosts)]
        url = stack.enter_context(_gateway(Path(folder), [host for host, _ in started]))
        asyncio.run(_drive(url, cell))
        for host, process in started:
            if process.poll() is not None:
                cell.crashed = f"a host exited {process.returncode}"
                continue
            cell.rss_kib.append(_peak_rss_kib(process.pid))
            cell.served.append(_answered(host))
    return cell


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


def _run_query(request_id: int, customer: int) -> dict[str, Any]:
    """A tools/call of `run_query` for one customer: each call its own parameter, so a misrouted answer shows."""
    arguments = {"sql": QUERY, "params": {"id": customer}}
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "run_query", "arguments": arguments},
    }


def _check_rows(result: dict[str, Any], customer: int) -> None:
    rows = result["structuredContent"]["rows"]
    if result["isError"] or len(rows) != 1 or rows[0][0] != customer:
        raise ValueError(f"wrong rows for customer {customer}: {rows!r}")


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
                body = _run_query(request_id, customer)
            try:
                result = _answer(await client.post(url, json=body), request_id)
                if step % 4 == 0:
                    if "run_query" not in {tool["name"] for tool in result["tools"]}:
                        raise ValueError("tools/list without run_query")
                else:
                    _check_rows(result, customer)
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


def _load() -> str:
    """The machine's load average over 1, 5 and 15 minutes: how much else shared the CPUs with the bench."""
    with open("/proc/loadavg") as loadavg:
        return " ".join(loadavg.read().split()[:3])


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else float("nan")


def run_cell(workers: int, sessions: int, extra: list[str] | None = None, env: dict[str, str] | None = None) -> Cell:
    cell = Cell(workers, sessions)
    with tempfile.TemporaryFile() as log:
        with _server(workers, extra, env, log) as (url, process):
            pids = _children(process.pid) if workers > 1 else [process.pid]
            asyncio.run(_drive(url, cell))
            if process.poll() is not None:
                cell.crashed = f"server exited {process.returncode}"
            elif workers > 1 and sorted(_children(process.pid)) != sorted(pids):
                cell.crashed = f"workers replaced: {pids} -> {_children(process.pid)}"
            cell.rss_kib = [_peak_rss_kib(pid) for pid in pids if os.path.exists(f"/proc/{pid}")]
        log.seek(0)
        said = log.read().decode(errors="replace")
    if "Fatal Python error" in said or "Segmentation fault" in said:
        cell.crashed = cell.crashed or "a worker crashed"
    return cell


def render(cells: list[Cell], skipped: str = "", load_at_start: str = "") -> str:
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
        f"Load average (1, 5, 15 min) at the start: {load_at_start or _load()}.",
        "",
        "| setup | sessions | requests/s | p50 ms | p95 ms | p99 ms | errors | peak RSS per process (MiB) | server |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for cell in cells:
        rate = len(cell.latencies) / cell.elapsed if cell.elapsed else 0.0
        ms = [1000 * _percentile(cell.latencies, q) for q in (0.5, 0.95, 0.99)]
        rss = ", ".join(f"{kib / 1024:.0f}" for kib in cell.rss_kib)
        lines.append(
            f"| {cell.label} | {cell.sessions} | {rate:,.0f} | {ms[0]:.1f} | {ms[1]:.1f} | {ms[2]:.1f} | "
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
    if skipped:
        lines += [f"Rows through nginx skipped: {skipped}.", ""]
    elif any(cell.setup for cell in cells):
        shares = "; ".join(
            f"{cell.sessions} session{'s' if cell.sessions > 1 else ''}: "
            + " / ".join(f"{served:,}" for served in cell.served)
            for cell in cells
            if len(cell.served) > 1
        )
        lines += [
            "Rows 'nginx, …': each host a separate `--stateless` server process (1 worker) on its own port, as",
            "separate machines would run it, behind nginx (1 worker process) routing every request round robin",
            "over `keepalive 16` upstream connections (deploy/nginx.conf's `mcp_any`); 'Redis': each host with",
            "`--state-url` to one `redis-server --save ''` the bench starts (per-client call leases, stream events",
            "and choices there), all on the same 2 CPUs as the client. nginx, Redis and every host share the",
            "machine with the client. The tools/call each host answered (its /metrics, warm-up included; with one",
            "session, round robin over the repeating list, call, call, call gives one host two calls to the",
            f"other's one): {shares}.",
            "",
        ]
    if any(cell.crashed for cell in cells):
        lines += [
            "A server that exited -11 died of SIGSEGV; one that exited 1 was the --workers parent giving up after",
            "its workers crashed repeatedly.",
            "",
        ]
    return "\n".join(lines)


LATENCY_ROUNDS = 15
LATENCY_CALLS = 200
THROUGHPUT_ROUNDS = 5
SINK = """
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class Sink(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as a collector does: the exporter reuses its connection

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        self.server.received += len(body)
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_GET(self):
        answer = str(self.server.received).encode()
        self.send_response(200)
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass

server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[sys.argv.index("--port") + 1])), Sink)
server.received = 0
server.serve_forever()
"""
"""An OTLP/HTTP collector that accepts and counts: the exporter's real work (encode, POST) without a collector's."""


MODES = ("off", "on", "sampled")
"""Both off; the audit log and tracing on, every span kept (the SDK's default); the same with a tenth of the
traces sampled (OTEL_TRACES_SAMPLER, the SDK's own setting)."""


@dataclass
class Overhead:
    latency_ms: dict[str, list[float]] = field(default_factory=lambda: {mode: [] for mode in MODES})
    rates: dict[str, list[float]] = field(default_factory=lambda: {mode: [] for mode in MODES})
    cpu_s: dict[str, float] = field(default_factory=lambda: dict.fromkeys(MODES, 0.0))
    calls: dict[str, int] = field(default_factory=lambda: dict.fromkeys(MODES, 0))
    audit_lines: int = 0
    span_bytes: int = 0
    load: str = ""
    metrics_us: float = 0.0


def _cpu_s(pid: int) -> float:
    """CPU seconds a process has used, all its threads (the audit writer's and the span exporter's included)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _operations(mode: str, folder: str, sink: str) -> tuple[list[str], dict[str, str] | None]:
    """The server's extra arguments and environment (beside this process's) for one arm."""
    if mode == "off":
        return [], None
    env = {
        "OTEL_TRACES_EXPORTER": "otlp",
        "OTEL_EXPORTER_OTLP_ENDPOINT": sink,
        "OTEL_SERVICE_NAME": "bench",
    }
    if mode == "sampled":
        env |= {"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.1"}
    return ["--audit-log", f"{folder}/audit-{mode}.jsonl"], env


async def _sequential(url: str, calls: int, first_id: int) -> list[float]:
    """One session, one connection: `calls` tools/call answered one after another; each latency, checked."""
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    headers["MCP-Protocol-Version"] = PROTOCOL
    latencies = []
    async with httpx2.AsyncClient(headers=headers, timeout=30, limits=httpx2.Limits(max_connections=1)) as client:
        for step in range(calls):
            request_id = first_id + step
            customer = 1 + step % 50
            began = time.perf_counter()
            result = _answer(await client.post(url, json=_run_query(request_id, customer)), request_id)
            latencies.append(time.perf_counter() - began)
            _check_rows(result, customer)
    return latencies


def _turns(round_: int) -> list[str]:
    """Each round a different arm goes first: no arm always meets the machine just after another."""
    shift = round_ % len(MODES)
    return [*MODES[shift:], *MODES[:shift]]


def operations_overhead() -> Overhead:
    """The audit log (a file) and tracing (OTLP/HTTP to a local sink) on, against both off: the same mcp-server-db,
    1 worker. Latency: the arms' servers run side by side, and each round sends LATENCY_CALLS sequential calls over
    one connection to each in turn (the order rotating), so all arms meet the same machine; the figure is the median
    of the rounds' medians. Throughput: the 16-session cell, the arms taking turns."""
    import statistics
    import timeit

    from mcp_server_core.operations.metrics import call_metrics

    result = Overhead()
    # The sink speaks HTTP on the port it is given, so the kit starts it and waits until it listens.
    with spawn_http_server([sys.executable, "-c", SINK]) as (sink_url, _sink):
        sink = sink_url.removesuffix("/mcp")
        with tempfile.TemporaryDirectory() as folder:
            with contextlib.ExitStack() as stack:
                servers = {mode: stack.enter_context(_server(1, *_operations(mode, folder, sink))) for mode in MODES}
                for mode in MODES:  # warm: the first calls import the SQL guard's parser
                    asyncio.run(_sequential(servers[mode][0], 50, 1))
                for round_ in range(LATENCY_ROUNDS):
                    for mode in _turns(round_):
                        url, process = servers[mode]
                        cpu_before = _cpu_s(process.pid)
                        latencies = asyncio.run(_sequential(url, LATENCY_CALLS, 1))
                        result.cpu_s[mode] += _cpu_s(process.pid) - cpu_before
                        result.calls[mode] += LATENCY_CALLS
                        result.latency_ms[mode].append(1000 * statistics.median(latencies))
                    medians = ", ".join(f"{mode} {result.latency_ms[mode][-1]:.3f} ms" for mode in MODES)
                    print(f"latency round {round_ + 1}: {medians}", file=sys.stderr)
            for round_ in range(THROUGHPUT_ROUNDS):
                for mode in _turns(round_):
                    cell = run_cell(1, 16, *_operations(mode, folder, sink))
                    if cell.errors or cell.crashed:
                        raise SystemExit(f"operations {mode}: {cell.errors[:3]} {cell.crashed}")
                    result.rates[mode].append(len(cell.latencies) / cell.elapsed)
                    print(f"throughput {mode}: {result.rates[mode][-1]:.0f} requests/s", file=sys.stderr)
            result.audit_lines = len(Path(folder, "audit-on.jsonl").read_text().splitlines())
        result.span_bytes = int(httpx2.get(f"{sink}/", timeout=5).text)
    result.load = _load()
    metrics = call_metrics()
    result.metrics_us = 1e6 * (
        min(
            timeit.repeat(
                lambda: (metrics.started("tools/call"), metrics.finished("tools/call", "run_query", "ok", None, 0.002)),
                number=10_000,
                repeat=5,
            )
        )
        / 10_000
    )
    return result


def render_overhead(result: Overhead) -> str:
    import statistics

    latency = {mode: statistics.median(values) for mode, values in result.latency_ms.items()}
    rate = {mode: statistics.median(values) for mode, values in result.rates.items()}
    cpu = {mode: 1000 * result.cpu_s[mode] / max(result.calls[mode], 1) for mode in MODES}

    def ratios(mode: str) -> str:
        each = [on / off for on, off in zip(result.latency_ms[mode], result.latency_ms["off"], strict=True)]
        return f"median {statistics.median(each):.3f}, {min(each):.3f} to {max(each):.3f}"

    def more(values: dict[str, float], mode: str) -> str:
        return f"{(values[mode] / values['off'] - 1) * 100:+.1f}%"

    def fewer(values: dict[str, float], mode: str) -> str:
        return f"{(1 - values[mode] / values['off']) * 100:+.1f}%"

    return "\n".join(
        [
            "## Audit log and tracing on (1 worker)",
            "",
            "On: `--audit-log <file>` and `OTEL_TRACES_EXPORTER=otlp` to a local OTLP/HTTP sink that keeps connections",
            "alive (the exporter's real encoding and POSTs), every span kept; sampled: the same with",
            "`OTEL_TRACES_SAMPLER=parentbased_traceidratio OTEL_TRACES_SAMPLER_ARG=0.1`; off: neither.",
            f"Latency: one session, sequential tools/call `run_query`, {LATENCY_ROUNDS} rounds of {LATENCY_CALLS} "
            "calls to each of three servers running side by side, the order rotating; the median of the rounds' "
            "medians.",
            f"Throughput: the 16-session cell above, {THROUGHPUT_ROUNDS} rounds taking turns, {DURATION_S:g} s each; "
            "the median. CPU: the server process's, all threads, over the latency rounds.",
            f"Load average (1, 5, 15 min) at the end: {result.load}.",
            "",
            "| measure | off | on | overhead | sampled 10 % | overhead |",
            "|---|---:|---:|---:|---:|---:|",
            f"| single-session call latency, median ms | {latency['off']:.3f} | {latency['on']:.3f} | "
            f"{more(latency, 'on')} | {latency['sampled']:.3f} | {more(latency, 'sampled')} |",
            f"| throughput at 16 sessions, requests/s | {rate['off']:.0f} | {rate['on']:.0f} | {fewer(rate, 'on')} | "
            f"{rate['sampled']:.0f} | {fewer(rate, 'sampled')} |",
            f"| server CPU per sequential call, ms | {cpu['off']:.3f} | {cpu['on']:.3f} | {more(cpu, 'on')} | "
            f"{cpu['sampled']:.3f} | {more(cpu, 'sampled')} |",
            "",
            f"Per-round latency ratio to off: on {ratios('on')}; sampled {ratios('sampled')}.",
            f"The 'on' servers wrote {result.audit_lines:,} audit lines; the sink received {result.span_bytes:,} bytes "
            "of spans (OTLP protobuf).",
            f"Metrics (always on over HTTP, every arm): {result.metrics_us:.1f} µs per call to record, in-process.",
            "",
        ]
    )


def main() -> int:
    if "--overhead-only" in sys.argv[1:]:  # the operations rows alone, printed, for trying a change
        print(render_overhead(operations_overhead()))
        return 0
    out = HERE / "results-http.md"
    started = time.monotonic()
    cells = []
    load_at_start = _load()
    skipped = gateway_missing()
    if skipped:
        print(f"rows through nginx skipped: {skipped}", file=sys.stderr)
    runs: list[Callable[[], Cell]] = [
        functools.partial(run_cell, workers, sessions) for workers in WORKERS for sessions in SESSIONS
    ]
    if not skipped:
        runs += [
            functools.partial(run_gateway_cell, hosts, with_redis, sessions)
            for hosts, with_redis in GATEWAY_SETUPS
            for sessions in SESSIONS
        ]
    if "--gateway-only" in sys.argv[1:]:  # the rows through nginx alone, printed, for trying a change
        runs = runs[len(WORKERS) * len(SESSIONS) :]
    for run in runs:
        cell = run()
        cells.append(cell)
        print(
            f"{cell.label} sessions={cell.sessions}: {len(cell.latencies)} requests, {len(cell.errors)} errors",
            file=sys.stderr,
        )
        for error in cell.errors[:5]:
            print(f"  {error}", file=sys.stderr)
    if "--gateway-only" in sys.argv[1:]:
        print(render(cells, skipped, load_at_start))
        return 1 if any(cell.errors or cell.crashed for cell in cells) else 0
    report = render(cells, skipped, load_at_start) + "\n" + render_overhead(operations_overhead())
    out.write_text(report)
    print(report)
    print(f"total {time.monotonic() - started:.0f} s", file=sys.stderr)
    return 1 if any(cell.errors or cell.crashed for cell in cells) else 0


if __name__ == "__main__":
    sys.exit(main())
