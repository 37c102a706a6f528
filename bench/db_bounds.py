"""Huge results, bounded: the answer's size, the server's peak memory growth and a ping's latency during each.

`uv run python bench/db_bounds.py` (part of `make bench`), written to `bench/results-db-bounds.md`. Each shape runs
in a fresh `mcp-server-db` process over stdio (so its peak RSS starts clean), after one warm-up query; the ping
is sent 0.2 s after the query.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcp_server_core.testing import StdioWire, python_module  # noqa: E402

PG = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
# One row as wide as PostgreSQL's target list allows: 1,663 columns of 999 characters (issue 25: 1.69 MB).
_WIDE = ", ".join(f"s AS c{i}" for i in range(1663))
_WIDE_PG = f"WITH v(s) AS (SELECT repeat('x', 999)) SELECT {_WIDE} FROM v"  # noqa: S608 - constant text
_WIDE_SQLITE = f"WITH v(s) AS (SELECT printf('%999s', 'x')) SELECT {_WIDE} FROM v"  # noqa: S608 - constant text
SHAPES = {
    "PostgreSQL": {
        "10 M rows": "SELECT generate_series(1, 10000000) AS n",
        "one 30 MB cell": "SELECT repeat('x', 30000000) AS big",
        "1,000 rows of 1 MB": "SELECT g, repeat('x', 1000000) AS mb FROM generate_series(1, 1000) g",
        "one row of 1,663 columns of 999 chars": _WIDE_PG,
    },
    "SQLite": {
        "10 M rows": (
            "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 10000000) SELECT n FROM c"
        ),
        "one 20 MB cell": "SELECT hex(zeroblob(10000000)) AS big",
        "1,000 rows of 1 MB": (
            "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 1000) "
            "SELECT n, hex(zeroblob(500000)) AS mb FROM c"
        ),
        "one row of 1,663 columns of 999 chars": _WIDE_SQLITE,
    },
}


def peak_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def measure(url: str, sql: str, extra: list[str]) -> tuple[int, float, float, float]:
    with StdioWire(python_module("mcp_server_db", url, "--schema-poll-s", "0", *extra)) as wire:
        wire.initialize()
        wire.request("tools/call", {"name": "run_query", "arguments": {"sql": "SELECT 1 AS warm"}})
        before = peak_kib(wire.proc.pid)
        started = time.monotonic()
        wire.send(
            {
                "jsonrpc": "2.0",
                "id": 9,
                "method": "tools/call",
                "params": {"name": "run_query", "arguments": {"sql": sql}},
            }
        )
        time.sleep(0.2)
        ping_sent = time.monotonic()
        wire.request("ping", timeout=120)
        ping_ms = (time.monotonic() - ping_sent) * 1000
        answer = wire.response_to(9, timeout=180)
        elapsed = time.monotonic() - started
        grown = (peak_kib(wire.proc.pid) - before) / 1024
        size = len(json.dumps(answer).encode())
        assert answer["result"]["structuredContent"]["truncated"] is True, answer
    return size, grown, elapsed, ping_ms


def main() -> None:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        empty = Path(tmp) / "empty.db"
        sqlite3.connect(empty).close()
        urls = {"PostgreSQL": (PG, ["--allow-privileged-role"]), "SQLite": (f"sqlite:///{empty}", [])}
        for engine, shapes in SHAPES.items():
            url, extra = urls[engine]
            for shape, sql in shapes.items():
                size, grown, elapsed, ping_ms = measure(url, sql, extra)
                rows.append((engine, shape, f"{size:,}", f"{grown:.1f}", f"{elapsed:.2f}", f"{ping_ms:.1f}"))
                print(rows[-1], flush=True)
    table = "\n".join(
        [
            "| engine | result | answer bytes (JSON-RPC) | peak RSS growth MiB | answered within s "
            "| ping during it ms |",
            "|---|---|---|---|---|---|",
            *[f"| {' | '.join(row)} |" for row in rows],
        ]
    )
    when = time.strftime("%Y-%m-%d")
    (ROOT / "bench" / "results-db-bounds.md").write_text(
        f"# Huge results, bounded\n\n`uv run python bench/db_bounds.py`, {when}, 2 cores.\n\n{table}\n"
    )
    print(table)


if __name__ == "__main__":
    main()
