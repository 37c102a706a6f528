"""`make bench` (db part): mcp-server-db beside mcp-alchemy, installed from the package registry, in one run.

One generated SQLite database serves both: 1,000 tables of 8 columns (each with a foreign key and an index) and
an `events` table of 1,000,000 rows. Each server runs as a subprocess over stdio, as a host runs it; the two
take turns call by call. Measured:
- tools/list bytes, and the bytes of the first answer to "which tables are there" on 1,000 tables;
- describe three tables: median time and bytes;
- the first page of `SELECT * FROM events` (1,000,000 rows): median time and bytes;
- peak RSS of the server process tree after the calls.
Writes bench/results-db.md and prints it.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp_server_core.testing.wire import StdioWire, python_module

HERE = Path(__file__).parent
TABLES = 1_000
EVENTS = 1_000_000
REPEAT = 15
ALCHEMY = "mcp-alchemy==2026.10.15.202659"


def build_database(path: Path) -> None:
    with sqlite3.connect(path) as db:
        for n in range(TABLES):
            parent = f", parent_id INTEGER REFERENCES t{n - 1:04d}(id)" if n else ""
            db.execute(
                f"CREATE TABLE t{n:04d} (id INTEGER PRIMARY KEY, name TEXT NOT NULL, code TEXT, qty INTEGER,"
                f" price REAL, created_at TEXT, note TEXT{parent})"
            )
            db.execute(f"CREATE INDEX t{n:04d}_code ON t{n:04d} (code)")
        db.execute(
            "CREATE TABLE events (id INTEGER PRIMARY KEY, user_id INTEGER NOT NULL, kind TEXT NOT NULL,"
            " amount REAL, created_at TEXT NOT NULL)"
        )
        kinds = ("view", "click", "buy", "refund")
        db.executemany(
            "INSERT INTO events VALUES (?, ?, ?, ?, ?)",
            (
                (i, i % 5000, kinds[i % 4], (i % 997) / 10, f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}")
                for i in range(EVENTS)
            ),
        )


def uvx() -> list[str]:
    found = shutil.which("uvx")
    return [found] if found else [sys.executable, "-m", "uv", "tool", "run"]


def peak_rss_kib(pid: int) -> int:
    """The largest VmHWM in the process tree: uvx starts the server as its child."""
    best = 0
    pending = [pid]
    while pending:
        current = pending.pop()
        try:
            status = Path(f"/proc/{current}/status").read_text()
            best = max(best, int(status.split("VmHWM:")[1].split()[0]))
            for task in Path(f"/proc/{current}/task").iterdir():
                pending += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, IndexError, ValueError):
            continue
    return best


def text_of(answer: dict[str, Any]) -> str:
    result = answer.get("result") or {}
    assert not result.get("isError"), answer
    return "\n".join(block.get("text", "") for block in result.get("content", []))


def answer_bytes(answer: dict[str, Any]) -> int:
    return len(json.dumps(answer["result"], separators=(",", ":")).encode())


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.db"
        print(f"building {TABLES:,} tables and {EVENTS:,} rows …", file=sys.stderr)
        build_database(path)
        url = f"sqlite:///{path}"
        servers = {
            "mcp-server-db": (python_module("mcp_server_db", url, "--schema-poll-s", "0"), {}),
            ALCHEMY: ([*uvx(), "--quiet", "--from", ALCHEMY, "mcp-alchemy"], {"DB_URL": url}),
        }
        calls = {
            "mcp-server-db": {
                "tables": ("find_objects", {}),
                "describe": ("describe_tables", {"tables": ["t0001", "t0002", "t0003"]}),
                "page": ("run_query", {"sql": "SELECT * FROM events"}),
            },
            ALCHEMY: {
                "tables": ("all_table_names", {}),
                "describe": ("schema_definitions", {"table_names": ["t0001", "t0002", "t0003"]}),
                "page": ("execute_query", {"query": "SELECT * FROM events"}),
            },
        }
        rows: dict[str, dict[str, Any]] = {name: {"times": {k: [] for k in ("describe", "page")}} for name in servers}
        wires = {name: StdioWire(argv, env=env) for name, (argv, env) in servers.items()}
        try:
            for name, wire in wires.items():
                wire.initialize()
                tools = wire.request("tools/list", timeout=120)["result"]["tools"]
                rows[name]["tools"] = len(tools)
                rows[name]["list_bytes"] = len(json.dumps({"tools": tools}, separators=(",", ":")).encode())
                tool, arguments = calls[name]["tables"]
                rows[name]["tables_bytes"] = answer_bytes(
                    wire.request("tools/call", {"name": tool, "arguments": arguments}, timeout=120)
                )
            print(f"calls: {REPEAT} of each per server, taking turns …", file=sys.stderr)
            for _ in range(REPEAT):
                for kind in ("describe", "page"):
                    for name, wire in wires.items():
                        tool, arguments = calls[name][kind]
                        started = time.perf_counter()
                        answer = wire.request("tools/call", {"name": tool, "arguments": arguments}, timeout=300)
                        rows[name]["times"][kind].append(time.perf_counter() - started)
                        text_of(answer)
                        rows[name][f"{kind}_bytes"] = answer_bytes(answer)
            for name, wire in wires.items():
                rows[name]["rss_mib"] = peak_rss_kib(wire.proc.pid) / 1024
        finally:
            for wire in wires.values():
                wire.__exit__(None, None, None)

    def ms(values: list[float]) -> str:
        return f"{statistics.median(values) * 1000:.1f} ms"

    lines = [
        "# Benchmarks: database inspector",
        "",
        f"`make bench` on {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"{time.strftime('%Y-%m-%d')}. One SQLite file: {TABLES:,} tables of 8 columns (a foreign key and an index "
        f"each) and `events` with {EVENTS:,} rows. Both servers over stdio, taking turns; medians of {REPEAT}.",
        "",
        "| server | tools | tools/list bytes | list tables: bytes | describe 3 tables | bytes "
        "| first page of 1M rows | bytes | peak RSS |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, row in rows.items():
        lines.append(
            f"| {name} | {row['tools']} | {row['list_bytes']:,} | {row['tables_bytes']:,} "
            f"| {ms(row['times']['describe'])} | {row['describe_bytes']:,} "
            f"| {ms(row['times']['page'])} | {row['page_bytes']:,} | {row['rss_mib']:.0f} MiB |"
        )
    lines += [
        "",
        "List tables: mcp-server-db answers with the first 100 names and a cursor (find_objects); mcp-alchemy's "
        "all_table_names sends every name. The first page is 100 rows for mcp-server-db (run_query's default "
        "limit); mcp-alchemy returns what fits its 4,000-character output limit.",
    ]
    table = "\n".join(lines) + "\n"
    (HERE / "results-db.md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
