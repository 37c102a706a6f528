"""Real services a test starts for itself and stops after: a `redis-server` of its own (`--state-url`), an nginx in
front of servers (the gateway docs/deploy.md configures), each on a port nothing else uses, keeping its files in the
test's own folder, so tests never share state with each other or the machine."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from mcp_server_core.testing.wire import PATIENCE_S, _stop, free_port

__all__ = ["NGINX", "REDIS_SERVER", "nginx", "redis_server"]

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


NGINX = shutil.which("nginx") or next((path for path in ("/usr/sbin/nginx",) if Path(path).exists()), None)
"""Debian's `nginx` where installed (`.ci/run` installs it), else None: a test skips on None."""


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


@contextlib.contextmanager
def nginx(server: str, *, http: str = "", folder: Path | None = None) -> Iterator[str]:
    """An nginx of the test's own in the foreground (never the system service), its files in `folder`: `server` inside
    `server {}` on a free port, `http` (upstreams, maps) before it; yields `http://127.0.0.1:P` once it accepts."""
    if NGINX is None:
        raise RuntimeError("nginx is not installed (apt-get install nginx-light)")
    with contextlib.ExitStack() as stack:
        if folder is None:
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        folder.mkdir(parents=True, exist_ok=True)
        port = free_port()
        config = folder / "nginx.conf"
        config.write_text(
            f"""worker_processes 1;
pid {folder}/nginx.pid;
error_log {folder}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {folder}/body;
    proxy_temp_path {folder}/proxy;
    fastcgi_temp_path {folder}/fastcgi;
    uwsgi_temp_path {folder}/uwsgi;
    scgi_temp_path {folder}/scgi;
{http}
    server {{
        listen 127.0.0.1:{port};
{server}
    }}
}}
"""
        )
        # Before it reads its config nginx writes to stderr (a bad directive, say): kept in a file, not a pipe
        # nobody drains.
        stderr = stack.enter_context((folder / "stderr.log").open("wb"))
        argv = [NGINX, "-p", str(folder), "-c", str(config), "-g", "daemon off;"]
        process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=stderr)
        stack.callback(_stop, process)
        deadline = time.monotonic() + PATIENCE_S
        while not _listening(port):
            if process.poll() is not None or time.monotonic() > deadline:
                said = (folder / "stderr.log").read_text(errors="replace")
                if (folder / "error.log").exists():
                    said += (folder / "error.log").read_text(errors="replace")
                raise RuntimeError(f"nginx did not listen on {port} (exit code {process.poll()}): {said[-2000:]}")
            time.sleep(0.02)
        yield f"http://127.0.0.1:{port}"
