"""Real services a test starts for itself and stops after: a `redis-server` of its own (`--state-url`), on a
port nothing else uses, keeping nothing on disk, so tests never share state with each other or the machine."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from mcp_server_core.testing.wire import PATIENCE_S

__all__ = ["REDIS_SERVER", "redis_server"]

REDIS_SERVER = shutil.which("redis-server") or next(
    (path for path in ("/usr/bin/redis-server", "/usr/sbin/redis-server") if Path(path).exists()), None
)
"""Debian's `redis-server` where installed (`.ci/run` installs it), else None: a test skips on None."""


def _answers(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1)
        if probe.connect_ex(("127.0.0.1", port)) != 0:
            return False
        probe.sendall(b"PING\r\n")
        return probe.recv(64).startswith(b"+PONG")


@contextlib.contextmanager
def redis_server(port: int) -> Iterator[subprocess.Popen[bytes]]:
    """A `redis-server` on 127.0.0.1:`port`, once it answers PING; stopped at the end unless the test stopped it
    (to see a server through an outage, it may terminate the process and start another on the same port)."""
    if REDIS_SERVER is None:
        raise RuntimeError("redis-server is not installed (apt-get install redis-server)")
    process = subprocess.Popen(
        [REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + PATIENCE_S
        while not _answers(port):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"redis-server on port {port} did not answer PING (exit code {process.poll()})")
            time.sleep(0.02)
        yield process
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=10)
