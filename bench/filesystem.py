"""`make bench` (filesystem part): mcp-server-filesystem beside the official server, in one run.

    uv run python bench/filesystem.py [--files 100000] [--mb 1000] [--no-official] [--output PATH]

Generates a tree of text files (default 100,000 files, 1 GB; scale down with the flags), then, each server a
subprocess over stdio as a host runs it, measures:
- tools/list bytes; cold start (spawn to the initialize answer, median of 5); trivial call (median of 200);
- content search over the whole tree: seconds for a literal found in a few files, beside `rg` on the same
  tree (when ripgrep is installed; the server never needs it). The official server has no content search;
- tree at depth 3: bytes returned, beside the official `directory_tree` (which has no depth limit);
- a 50 MB file read by range (its tail, and 100 lines from the middle): time, and the server's peak RSS
  before and after (VmHWM from /proc).
The official `@modelcontextprotocol/server-filesystem` is installed with npm into a temporary directory at
bench time. Writes bench/results-filesystem.md and prints it. Timings depend on the machine (and on what
else runs on it); byte counts do not.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp_server_core.testing.wire import StdioWire, python_module

HERE = Path(__file__).parent
NEEDLE = "zebracorn_4711"
WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "request",
    "response",
    "server",
    "client",
    "handler",
    "buffer",
    "stream",
    "token",
    "config",
    "value",
    "index",
    "table",
    "record",
    "commit",
    "branch",
    "module",
    "import",
    "return",
    "yield",
    "async",
    "await",
    "raise",
    "error",
    "retry",
]


def build_tree(top: Path, files: int, total_mb: int) -> tuple[int, int, Path]:
    """A three-level tree of text files with NEEDLE in one file of 2,000; returns (files, bytes, big file)."""
    rng = random.Random(7)
    size = max(total_mb * 1024 * 1024 // files, 200)
    block = " ".join(rng.choice(WORDS) for _ in range(200_000))
    lines = "\n".join(block[i : i + 72] for i in range(0, len(block), 72)).encode() + b"\n"
    while len(lines) <= size * 2:
        lines += lines
    per_leaf = 10
    leaves = max(files // per_leaf, 1)
    fanout = max(round(leaves ** (1 / 3)), 1)
    written = total = 0
    (top / ".gitignore").write_text("*.log\n")
    for index in range(leaves):
        a, b, c = index // (fanout * fanout), (index // fanout) % fanout, index % fanout
        leaf = top / f"d{a:02}" / f"m{b:02}" / f"l{c:02}"
        leaf.mkdir(parents=True, exist_ok=True)
        for n in range(per_leaf):
            if written >= files:
                break
            start = rng.randrange(0, len(lines) - size)
            start = lines.index(b"\n", start) + 1
            body = lines[start : start + size]
            if written % 2000 == 1999:
                body = body[: size // 2] + f"\nfound {NEEDLE} here\n".encode() + body[size // 2 :]
            (leaf / f"f{n}.txt").write_bytes(body)
            written += 1
            total += len(body)
    big = top / "big.txt"
    with big.open("wb") as handle:
        while handle.tell() < 50 * 1024 * 1024:
            handle.write(lines)
    return written, total, big


def install_official(into: Path) -> list[str] | None:
    npm = shutil.which("npm")
    if npm is None:
        return None
    done = subprocess.run(
        [npm, "install", "--prefix", str(into), "--no-audit", "--no-fund", "@modelcontextprotocol/server-filesystem"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    entry = into / "node_modules" / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js"
    if done.returncode != 0 or not entry.exists():
        print(f"npm install failed: {done.stderr[-500:]}", file=sys.stderr)
        return None
    return [shutil.which("node") or "node", str(entry)]


def official_version(into: Path) -> str:
    package = into / "node_modules" / "@modelcontextprotocol" / "server-filesystem" / "package.json"
    return str(json.loads(package.read_text()).get("version", "?"))


def peak_rss_kib(pid: int) -> int:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        return int(status.split("VmHWM:")[1].split()[0])
    except (OSError, IndexError, ValueError):
        return 0


def call(wire: StdioWire, name: str, arguments: dict[str, Any], timeout: float = 300.0) -> tuple[float, str]:
    started = time.perf_counter()
    answer = wire.request("tools/call", {"name": name, "arguments": arguments}, timeout=timeout)
    elapsed = time.perf_counter() - started
    result = answer.get("result") or {}
    if answer.get("error") or result.get("isError"):
        raise RuntimeError(f"{name} failed: {json.dumps(answer)[:400]}")
    text = "\n".join(block.get("text", "") for block in result.get("content", []))
    return elapsed, text


def result_bytes(wire: StdioWire, name: str, arguments: dict[str, Any]) -> tuple[float, int]:
    started = time.perf_counter()
    answer = wire.request("tools/call", {"name": name, "arguments": arguments}, timeout=300)
    elapsed = time.perf_counter() - started
    return elapsed, len(json.dumps(answer.get("result"), separators=(",", ":")).encode())


def cold_start(argv: list[str]) -> float:
    started = time.perf_counter()
    with StdioWire(argv) as wire:
        wire.initialize()
        return time.perf_counter() - started


def tools_bytes(wire: StdioWire) -> tuple[int, int]:
    tools = wire.request("tools/list")["result"]["tools"]
    return len(json.dumps({"tools": tools}, separators=(",", ":")).encode()), len(tools)


def measure(label: str, argv: list[str], tree: Path, big: Path, *, ours: bool) -> dict[str, Any]:
    print(f"{label}: cold start …", file=sys.stderr)
    row: dict[str, Any] = {"cold": statistics.median(cold_start(argv) for _ in range(5))}
    with StdioWire(argv) as wire:
        wire.initialize()
        row["tools_bytes"], row["tools"] = tools_bytes(wire)
        trivial = ("list_directory", {"path": str(tree / "d00" / "m00" / "l00")})
        for _ in range(10):
            call(wire, *trivial)
        row["trivial"] = statistics.median(call(wire, *trivial)[0] for _ in range(200))
        print(f"{label}: tree …", file=sys.stderr)
        if ours:
            row["tree_time"], row["tree_bytes"] = result_bytes(wire, "show_tree", {"path": str(tree), "depth": 3})
            row["tree_max_time"], row["tree_max_bytes"] = result_bytes(
                wire, "show_tree", {"path": str(tree), "depth": 3, "limit": 5000}
            )
        else:
            row["tree_time"], row["tree_bytes"] = result_bytes(wire, "directory_tree", {"path": str(tree)})
        print(f"{label}: 50 MB ranged read …", file=sys.stderr)
        row["rss_before"] = peak_rss_kib(wire.proc.pid)
        if ours:
            row["tail_time"], _ = call(wire, "read_file", {"path": str(big), "offset": -100})
            row["middle_time"], _ = call(wire, "read_file", {"path": str(big), "offset": 350_000, "lines": 100})
        else:
            row["tail_time"], _ = call(wire, "read_text_file", {"path": str(big), "tail": 100})
            row["middle_time"] = None
        row["rss_after"] = peak_rss_kib(wire.proc.pid)
        if ours:
            print(f"{label}: content search …", file=sys.stderr)
            arguments = {"query": NEEDLE, "path": str(tree), "limit": 1000}
            runs = [call(wire, "search_text", arguments) for _ in range(3)]
            row["search"] = statistics.median(elapsed for elapsed, _ in runs)
            row["search_hits"] = runs[0][1].count(NEEDLE)
    return row


def rg_seconds(tree: Path) -> tuple[float, int] | None:
    rg = shutil.which("rg")
    if rg is None:
        return None
    runs = []
    for _ in range(3):
        started = time.perf_counter()
        done = subprocess.run([rg, "-n", NEEDLE, str(tree)], capture_output=True, text=True, check=False)
        runs.append(time.perf_counter() - started)
    return statistics.median(runs), done.stdout.count(NEEDLE)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--mb", type=int, default=1000, help="total size of the small files")
    parser.add_argument("--no-official", action="store_true", help="skip the npm install of the official server")
    parser.add_argument("--output", type=Path, default=HERE / "results-filesystem.md", help="where the report goes")
    options = parser.parse_args()
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="fsbench-") as scratch:
        tree = Path(scratch) / "tree"
        tree.mkdir()
        print(f"generating {options.files:,} files, {options.mb:,} MB …", file=sys.stderr)
        files, total, big = build_tree(tree, options.files, options.mb)
        official = None if options.no_official else install_official(Path(scratch) / "npm")
        version = official_version(Path(scratch) / "npm") if official else None
        rows = {
            "mcp-server-filesystem": measure(
                "ours", python_module("mcp_server_filesystem", str(tree), "--no-watch"), tree, big, ours=True
            )
        }
        if official:
            rows[f"official {version}"] = measure("official", [*official, str(tree)], tree, big, ours=False)
        print("rg …", file=sys.stderr)
        rg = rg_seconds(tree)
        report = render(rows, rg, files, total, time.perf_counter() - began)
    options.output.write_text(report)
    print(report)


def render(rows: dict[str, dict[str, Any]], rg: tuple[float, int] | None, files: int, total: int, spent: float) -> str:
    ours = rows["mcp-server-filesystem"]

    def ms(value: float | None) -> str:
        return "n/a" if value is None else f"{value * 1000:,.1f} ms"

    lines = [
        "# mcp-server-filesystem benchmark",
        "",
        f"`uv run python bench/filesystem.py` on {time.strftime('%Y-%m-%d')}, {platform.machine()}, "
        f"{os.cpu_count()} CPUs shared with other work, Python {platform.python_version()}. Tree: {files:,} text files "
        f"({total / 1e6:,.0f} MB) in three directory levels, plus one 50 MB file; page cache warm after generation. "
        f"Whole run: {spent:,.0f} s.",
        "",
        "| server | tools | tools/list bytes | cold start (median of 5) | trivial call (median of 200) |",
        "|---|---|---|---|---|",
    ]
    for name, row in rows.items():
        lines.append(f"| {name} | {row['tools']} | {row['tools_bytes']:,} | {ms(row['cold'])} | {ms(row['trivial'])} |")
    lines += ["", "## Content search (a literal in 1 file of 2,000; whole tree scanned)", ""]
    lines.append("| tool | seconds | matches |")
    lines.append("|---|---|---|")
    lines.append(
        f"| mcp-server-filesystem `search_text` (median of 3) | {ours['search']:.2f} | {ours['search_hits']} |"
    )
    if rg:
        lines.append(f"| ripgrep `rg -n` (median of 3) | {rg[0]:.2f} | {rg[1]} |")
        lines.append(f"| ratio | {ours['search'] / rg[0]:.1f}x rg | |")
    for name, row in rows.items():
        if "search" not in row:
            lines.append(f"| {name} | no content search tool | |")
    lines += ["", "## Tree at depth 3", ""]
    lines.append("| call | bytes returned | time |")
    lines.append("|---|---|---|")
    lines.append(f"| `show_tree` depth 3 (default limit 500) | {ours['tree_bytes']:,} | {ms(ours['tree_time'])} |")
    lines.append(f"| `show_tree` depth 3, limit 5000 | {ours['tree_max_bytes']:,} | {ms(ours['tree_max_time'])} |")
    for name, row in rows.items():
        if name != "mcp-server-filesystem":
            lines.append(
                f"| {name} `directory_tree` (no depth limit) | {row['tree_bytes']:,} | {ms(row['tree_time'])} |"
            )
    lines += ["", "## 50 MB file read by range", ""]
    lines.append("| server | last 100 lines | 100 lines from line 350,000 | peak RSS before → after |")
    lines.append("|---|---|---|---|")
    for name, row in rows.items():
        rss = f"{row['rss_before'] / 1024:,.1f} → {row['rss_after'] / 1024:,.1f} MiB"
        lines.append(f"| {name} | {ms(row['tail_time'])} | {ms(row['middle_time'])} | {rss} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
