"""What one HTTP process withstands: a legitimate client's latency while hostile clients attack, and what they cost.

`make bench-hostile` (`uv run python bench/http_hostile.py`), written to `bench/results-hostile.md`. One
`mcp-server-db` process on its sample, with a static token per client, on loopback; for each attack the table
gives the connections the server still holds at its end, the server's RSS growth per hostile connection, and a
legitimate client's `run_query` latency (p50 / max of 20 calls, each on a fresh session) during it.

A second table is for hostile *content*: one request each, against a fresh server, and what it cost the server:
CPU seconds, peak RSS above the RSS before it, the bytes of its answer, and how long it took. A row is a
`ContentAttack` in `CONTENT_ATTACKS`: a name, the server (a key of `SERVERS`, each started over an empty folder),
and the request, built from that folder (plant the hostile file there first). `--only WORDS` runs the rows whose
name holds them, without the connection table.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcp_server_core.testing import HttpWire, python_module, spawn_http_server  # noqa: E402

GOOD = "bench-good-" + "g" * 40
EVIL = "bench-evil-" + "e" * 40
SLOW_SQL = "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 20000000) SELECT count(*) FROM c"


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def connections(pid: int, port: int) -> int:
    """Established TCP connections to `port` (the server's side), from /proc/net/tcp."""
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            if state == "01" and int(local.split(":")[1], 16) == port:
                count += 1
    return count


def legit_latency(url: str, calls: int = 20) -> tuple[float, float]:
    seen = []
    for n in range(calls):
        started = time.monotonic()
        with HttpWire(url, token=GOOD) as wire:
            wire.initialize()
            answer = wire.request("tools/call", {"name": "run_query", "arguments": {"sql": f"SELECT {n} AS n"}})
            assert answer["result"]["structuredContent"]["rows"] == [[n]], answer
        seen.append((time.monotonic() - started) * 1000)
    return statistics.median(seen), max(seen)


def addr(url: str) -> tuple[str, int]:
    host, port = url.split("//")[1].split("/")[0].split(":")
    return host, int(port)


def slowloris(url: str, count: int, stop: threading.Event) -> list[socket.socket]:
    socks = []
    for _ in range(count):
        sock = socket.create_connection(addr(url))
        sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        socks.append(sock)

    def dribble() -> None:
        while not stop.wait(0.5):
            for sock in socks:
                with contextlib.suppress(OSError):  # the server closed it: that is the point
                    sock.sendall(b"X: 1\r\n")

    threading.Thread(target=dribble, daemon=True).start()
    return socks


def endless_bodies(url: str, count: int, stop: threading.Event) -> list[socket.socket]:
    socks = []
    head = (
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Authorization: Bearer {EVIL}\r\nTransfer-Encoding: chunked\r\n\r\n"
    ).encode()
    for _ in range(count):
        sock = socket.create_connection(addr(url))
        sock.sendall(head)
        socks.append(sock)

    def feed() -> None:
        chunk = b"10000\r\n" + b" " * 0x10000 + b"\r\n"
        while not stop.wait(0.2):
            for sock in socks:
                with contextlib.suppress(OSError):
                    sock.sendall(chunk)

    threading.Thread(target=feed, daemon=True).start()
    return socks


SMALL_STRINGS = (
    b'{"jsonrpc":"2.0","id":7,"method":"ping","params":{"_meta":{"x":['
    + b'"ab",' * ((8 * 1024 * 1024 - 4096) // 5)
    + b'"ab"]}}}'
)
"""8 MiB of short strings: within every byte limit, and 1.7 million values to build (+291 MiB before the bound)."""


def parser_bombs(url: str, count: int, stop: threading.Event) -> list[socket.socket]:
    return _bodies_back_to_back(url, count, stop, b"[" + b"{}," * 1_300_000 + b"{}]")  # 4 MiB, batch-shaped


def small_string_bodies(url: str, count: int, stop: threading.Event) -> list[socket.socket]:
    return _bodies_back_to_back(url, count, stop, SMALL_STRINGS)


def _bodies_back_to_back(url: str, count: int, stop: threading.Event, body: bytes) -> list[socket.socket]:
    head = (
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Authorization: Bearer {EVIL}\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()

    def fire() -> None:
        while not stop.is_set():
            try:
                with socket.create_connection(addr(url), timeout=10) as sock:
                    sock.sendall(head + body)
                    sock.recv(4096)
            except OSError:
                pass

    for _ in range(count):
        threading.Thread(target=fire, daemon=True).start()
    return []


def query_flood(url: str, count: int, stop: threading.Event) -> list[socket.socket]:
    """`count` sessions of one client, each running slow queries back to back; one turned away (429, or the
    per-client call limit) tries again a second later, as Retry-After asks."""

    def flood() -> None:
        while not stop.is_set():
            try:
                with HttpWire(url, token=EVIL) as wire:
                    wire.initialize()
                    answer = wire.request("tools/call", {"name": "run_query", "arguments": {"sql": SLOW_SQL}})
                    if "Too many calls" in json.dumps(answer):
                        stop.wait(1.0)
            except Exception:  # refused or cut: the flood goes on after the Retry-After
                stop.wait(1.0)

    for _ in range(count):
        threading.Thread(target=flood, daemon=True).start()
    return []


ATTACKS: list[tuple[str, int, Callable[[str, int, threading.Event], list[socket.socket]]]] = [
    ("none (baseline)", 0, lambda url, n, stop: []),
    ("slowloris: headers dribbled", 300, slowloris),
    ("bodies that never end (64 KiB / 0.2 s)", 40, endless_bodies),
    ("4 MiB batch-shaped bodies, back to back", 4, parser_bombs),
    ("8 MiB bodies of short strings, back to back", 2, small_string_bodies),
    ("60 concurrent slow SQLite queries from one client", 60, query_flood),
]


def _sample_db(folder: Path) -> list[str]:
    from mcp_server_db.database import sample_path

    sample = folder / "sample.db"
    sample.write_bytes(sample_path().read_bytes())
    return python_module("mcp_server_db", f"sqlite:///{sample}", "--schema-poll-s", "0")


SERVERS: dict[str, Callable[[Path], list[str]]] = {
    "template": lambda folder: python_module("mcp_server_template", "--notes-dir", str(folder / "notes")),
    "db": _sample_db,
    "filesystem": lambda folder: python_module("mcp_server_filesystem", str(folder)),
}
"""argv for each server over an empty folder of its own (HTTP flags are added)."""


@dataclass(frozen=True)
class ContentAttack:
    name: str
    server: str
    """A key of `SERVERS`."""
    request: Callable[[Path], dict[str, Any] | bytes]
    """The request (a message, or raw bytes to POST), given the server's folder: plant hostile files there."""


def _call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}


CONTENT_ATTACKS: list[ContentAttack] = [
    ContentAttack("baseline: ping", "template", lambda folder: {"jsonrpc": "2.0", "id": 7, "method": "ping"}),
    ContentAttack("8 MiB ping of short strings (1.7 M values)", "template", lambda folder: SMALL_STRINGS),
    ContentAttack(
        "8 MiB ping of small integers (1.7 M values)",
        "template",
        lambda folder: SMALL_STRINGS.replace(b'"ab"', b"1000"),
    ),
    ContentAttack(
        "8 MiB ping, one distinct 125-byte string per 128 bytes (at the value bound: served)",
        "template",
        lambda folder: (
            b'{"jsonrpc":"2.0","id":7,"method":"ping","params":{"_meta":{"x":['
            + b",".join(b'"%0125d"' % n for n in range((8 * 1024 * 1024 - 4096) // 128))
            + b"]}}}"
        ),
    ),
    ContentAttack(
        "a note holding a JSON array of 100,000 short strings (text: passes)",
        "template",
        lambda folder: _call("write_note", {"name": "big.json", "text": json.dumps(["ab"] * 100_000)}),
    ),
    ContentAttack(
        "search_text regex (\\w+\\s?)*zzz over 2,000 lines of 70 word characters (minutes on Python's re)",
        "filesystem",
        lambda folder: (
            _planted(folder, {"words.txt": ("abcdefgh " * 8 + "!\n") * 2000})
            or _call("search_text", {"query": r"(\w+\s?)*zzz", "regex": True})
        ),
    ),
    ContentAttack(
        "find_files *a*a*a*a*a*a*a*a*a*a*a*a*b beside a file named 'a' x 60",
        "filesystem",
        lambda folder: (
            _planted(folder, {"a" * 60: "x"}) or _call("find_files", {"pattern": "*a*a*a*a*a*a*a*a*a*a*a*a*b"})
        ),
    ),
    ContentAttack(
        "search_text MATCH, context 10, limit 1000, 1,000 matches under a 3,000-byte path (was 85,565,995 bytes)",
        "filesystem",
        lambda folder: (
            _planted(folder, {_LONG_PATH + "/hits.txt": ("MATCH " + "y" * 60 + "\n") * 1000})
            or _call("search_text", {"query": "MATCH", "context": 10, "limit": 1000})
        ),
    ),
    ContentAttack(
        "run_query: one row of 1,663 columns of 999 characters, SQLite (was 2.03 MB)",
        "db",
        lambda folder: _call(
            "run_query",
            {"sql": "SELECT " + ", ".join(f"substr(hex(zeroblob(500)), 1, 999) AS c{n}" for n in range(1663))},
        ),
    ),
]

_LONG_PATH = "/".join(["d" * 200] * 15)


def _planted(folder: Path, files: dict[str, str]) -> None:
    """Write `files` (relative path: text) under `folder`: what a hostile repository holds."""
    for relative, text in files.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def _peak_rss_reset(pid: int) -> int:
    Path(f"/proc/{pid}/clear_refs").write_text("5")  # VmHWM := VmRSS
    return rss_kib(pid)


def _peak_rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def content_rows(only: str = "") -> list[tuple[str, ...]]:
    rows = []
    for attack in CONTENT_ATTACKS:
        if only not in attack.name:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            request = attack.request(folder)
            body = request if isinstance(request, bytes) else json.dumps(request).encode()
            with spawn_http_server(SERVERS[attack.server](folder)) as (url, process), HttpWire(url) as wire:
                wire.initialize()
                wire.request("ping")  # warm
                cpu, before = _cpu_seconds(process.pid), _peak_rss_reset(process.pid)
                started = time.monotonic()
                answer = wire.post(body)
                took = time.monotonic() - started
                cpu = _cpu_seconds(process.pid) - cpu
                peak = _peak_rss_kib(process.pid) - before
                outcome = answer.text[:2000]
                verdict = (
                    "refused" if '"error"' in outcome else "isError" if '"isError":true' in outcome else "answered"
                )
                rows.append(
                    (
                        attack.name,
                        attack.server,
                        f"{len(body):,}",
                        f"{answer.status_code} {verdict}",
                        f"{cpu:.2f}",
                        f"{peak / 1024:.1f}",
                        f"{len(answer.content):,}",
                        f"{took:.2f}",
                    )
                )
                print(rows[-1], flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", help="run only the content attacks whose name holds this, and write nothing")
    args = parser.parse_args()
    if args.only is not None:
        content_rows(args.only)
        return
    started_load = os.getloadavg()[0]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tokens = Path(tmp) / "tokens"
        tokens.write_text(f"{GOOD}\n{EVIL}\n")
        sample = Path(tmp) / "sample.db"
        from mcp_server_db.database import sample_path

        sample.write_bytes(sample_path().read_bytes())
        argv = python_module("mcp_server_db", f"sqlite:///{sample}", "--auth-token-file", str(tokens))
        argv += ["--schema-poll-s", "0", "--call-timeout-s", "5"]
        for name, count, attack in ATTACKS:
            with spawn_http_server(argv) as (url, process):
                legit_latency(url, 3)  # warm: imports, pools
                before = rss_kib(process.pid)
                stop = threading.Event()
                socks = attack(url, count, stop)
                time.sleep(2.0)
                p50, worst = legit_latency(url)
                time.sleep(max(0.0, 12.0 - 2.0))  # past the 10 s header deadline
                held = connections(process.pid, addr(url)[1])
                grown = rss_kib(process.pid) - before
                stop.set()
                for sock in socks:
                    sock.close()
                per = f"{grown / count:.0f}" if count else "-"
                rows.append((name, count, held, per, f"{p50:.1f}", f"{worst:.1f}"))
                print(rows[-1], flush=True)
    lines = [
        "| attack | hostile clients | connections still held after 12 s | RSS growth per hostile client (KiB) "
        "| legitimate run_query p50 ms | max ms |",
        "|---|---|---|---|---|---|",
        *[f"| {' | '.join(map(str, row))} |" for row in rows],
    ]
    table = "\n".join(lines)
    content = "\n".join(
        [
            "| content attack | server | request bytes | outcome | server CPU s | peak RSS growth MiB | answer bytes "
            "| seconds |",
            "|---|---|---|---|---|---|---|---|",
            *[f"| {' | '.join(row)} |" for row in content_rows()],
        ]
    )
    out = ROOT / "bench" / "results-hostile.md"
    # Latencies mean little on a busy machine: the load says how busy it was (2 cores: above 2, others waited).
    load = f"load average {started_load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end"
    out.write_text(
        "# What one process withstands\n\n`make bench-hostile`, one mcp-server-db process on its sample, loopback, "
        f"2 cores; measured {time.strftime('%Y-%m-%d')}, {load}.\n\n{table}\n\n## Hostile content, one request each\n\n"
        "A fresh server per row; CPU is the server process's (user + system) over the request, peak RSS is its "
        f"high-water mark above its RSS before it.\n\n{content}\n"
    )
    print(table)
    print(content)


if __name__ == "__main__":
    main()
