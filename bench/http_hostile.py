"""What one HTTP process withstands: a legitimate client's latency while hostile clients attack, and what they cost.

`make bench-hostile` (`uv run python bench/http_hostile.py`), written to `bench/results-hostile.md`. One
`mcp-server-db` process on its sample, with a static token per client, on loopback; for each attack the table
gives the connections the server still holds at its end, the server's RSS growth per hostile connection, and a
legitimate client's `run_query` latency (p50 / max of 20 calls, each on a fresh session) during it.
"""

from __future__ import annotations

import contextlib
import json
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

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


def parser_bombs(url: str, count: int, stop: threading.Event) -> list[socket.socket]:
    body = b"[" + b"{}," * 1_300_000 + b"{}]"  # about 4 MiB shaped like a batch
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
    ("60 concurrent slow SQLite queries from one client", 60, query_flood),
]


def main() -> None:
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
    out = ROOT / "bench" / "results-hostile.md"
    out.write_text(
        "# What one process withstands\n\n`make bench-hostile`, one mcp-server-db process on its sample, loopback, "
        f"2 cores; measured {time.strftime('%Y-%m-%d')}.\n\n{table}\n"
    )
    print(table)


if __name__ == "__main__":
    main()
