"""`make bench`: the template server against a bare FastMCP server with the same tools, in one run.

Measures over stdio, each server as a subprocess exactly as a host runs it:
- cold start: spawn to the initialize response (median of 10 spawns);
- tools/call round trip: 500 sequential read_note calls on one connection (median and p95);
- tools/list: bytes of the compact JSON result.
Writes bench/results.md and prints it. Timing depends on the machine; the ratio is the figure that travels.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from mcp_server_core.testing.wire import StdioWire, python_module

SPAWNS = 10
CALLS = 500
HERE = Path(__file__).parent


def servers(notes: Path) -> dict[str, list[str]]:
    return {
        "mcp-server-template (helpers)": python_module("mcp_server_template", "--notes-dir", str(notes)),
        "bare FastMCP": [sys.executable, str(HERE / "bare_server.py"), str(notes)],
    }


def cold_start(argv: list[str]) -> float:
    started = time.perf_counter()
    with StdioWire(argv) as wire:
        wire.initialize()
        elapsed = time.perf_counter() - started
    return elapsed


def round_trips(argvs: dict[str, list[str]]) -> dict[str, list[float]]:
    """Sequential calls on one connection per server, the servers taking turns so drift hits both alike."""
    call = {"name": "read_note", "arguments": {"name": "groceries"}}
    wires = {name: StdioWire(argv) for name, argv in argvs.items()}
    times: dict[str, list[float]] = {name: [] for name in wires}
    try:
        for wire in wires.values():
            wire.initialize()
            for _ in range(20):  # warm-up: lazy imports on first call, caches filled
                wire.request("tools/call", call)
        for _ in range(CALLS):
            for name, wire in wires.items():
                started = time.perf_counter()
                answer = wire.request("tools/call", call)
                times[name].append(time.perf_counter() - started)
                assert not answer["result"]["isError"], answer
    finally:
        for wire in wires.values():
            wire.__exit__(None, None, None)
    return times


def tools_list_bytes(argv: list[str]) -> int:
    with StdioWire(argv) as wire:
        wire.initialize()
        tools = wire.request("tools/list")["result"]["tools"]
    return len(json.dumps({"tools": tools}, separators=(",", ":")).encode())


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[18]


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        notes = Path(folder)
        (notes / "groceries").write_text("milk\neggs\nbread\n" * 20)
        argvs = servers(notes)
        starts: dict[str, list[float]] = {name: [] for name in argvs}
        print(f"cold starts: {SPAWNS} per server, taking turns …", file=sys.stderr)
        for _ in range(SPAWNS):
            for name, argv in argvs.items():
                starts[name].append(cold_start(argv))
        print(f"round trips: {CALLS} per server, taking turns …", file=sys.stderr)
        trips = round_trips(argvs)
        rows = {
            name: {
                "start": statistics.median(starts[name]),
                "rtt_median": statistics.median(trips[name]),
                "rtt_p95": p95(trips[name]),
                "bytes": tools_list_bytes(argv),
            }
            for name, argv in argvs.items()
        }
    ours, bare = rows["mcp-server-template (helpers)"], rows["bare FastMCP"]

    def ratio(key: str) -> str:
        return f"{ours[key] / bare[key]:.2f}×"

    ms: Callable[[float], str] = lambda seconds: f"{seconds * 1000:.1f} ms"  # noqa: E731
    lines = [
        "# Benchmarks",
        "",
        f"`make bench` on {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"{time.strftime('%Y-%m-%d')}. Each server runs as a subprocess over stdio; the two servers take turns "
        "(spawn A, spawn B, …; call A, call B, …) so machine drift affects both alike.",
        "",
        f"| server | cold start to initialize (median of {SPAWNS}) | tools/call median ({CALLS} sequential) "
        "| tools/call p95 | tools/list bytes |",
        "|---|---|---|---|---|",
    ]
    for name, row in rows.items():
        lines.append(
            f"| {name} | {ms(row['start'])} | {ms(row['rtt_median'])} | {ms(row['rtt_p95'])} | {row['bytes']:,} |"
        )
    lines.append(
        f"| ratio (helpers / bare) | {ratio('start')} | {ratio('rtt_median')} | {ratio('rtt_p95')} | {ratio('bytes')} |"
    )
    lines += [
        "",
        "The bare server has the same five tools on the same domain code, with fastmcp's defaults: no titles or "
        "annotations, no output budget, JSON text beside structured content, and no answer to malformed lines. "
        "Its tools/list is smaller because it says less about each tool, not because it is leaner.",
    ]
    table = "\n".join(lines) + "\n"
    (HERE / "results.md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
