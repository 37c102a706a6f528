"""Real services a test starts for itself and stops after: a `redis-server` of its own (`--state-url`), on a
port nothing else uses, keeping nothing on disk, so tests never share state with each other or the machine; and
the gateways docs/deploy.md puts in front of several hosts (nginx, HAProxy), each with a configuration the test
wrote, in the foreground, so the test's end stops them."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from mcp_server_core.testing.wire import PATIENCE_S, _stop, free_port

__all__ = ["HAPROXY", "NGINX", "REDIS_SERVER", "haproxy", "nginx", "redis_server"]


def _installed(name: str) -> str | None:
    # Debian puts daemons in /usr/sbin, which an unprivileged PATH may leave out.
    return shutil.which(name) or next(
        (path for path in (f"/usr/bin/{name}", f"/usr/sbin/{name}") if Path(path).exists()), None
    )


REDIS_SERVER = _installed("redis-server")
"""Debian's `redis-server` where installed (`.ci/run` installs it), else None: a test skips on None."""
NGINX = _installed("nginx")
"""Debian's `nginx` where installed (`.ci/run` installs nginx-light), else None: a test skips on None."""
HAPROXY = _installed("haproxy")
"""Debian's `haproxy` where installed (`.ci/run` installs it), else None: a test skips on None."""


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
        _until(process, lambda: _answers(port), lambda: f"redis-server on port {port} did not answer PING")
        yield process
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=10)


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
        logs = [folder / "stderr.log", folder / "error.log"]

        def why_not() -> str:
            said = "".join(log.read_text(errors="replace") for log in logs if log.exists())
            return f"nginx did not listen on {port}: {said[-2000:]}"

        _until(process, lambda: _accepts(port), why_not)
        yield f"http://127.0.0.1:{port}"


@contextlib.contextmanager
def haproxy(config: Path, port: int, *, log: IO[bytes] | None = None) -> Iterator[subprocess.Popen[bytes]]:
    """HAProxy in the foreground (`-db`) with `config` (which binds 127.0.0.1:`port`), once the port accepts
    connections; stopped at the end. Its own log (`log stdout`) goes to `log` when given (not to a pipe nobody
    reads, which would stop it once full)."""
    if HAPROXY is None:
        raise RuntimeError("haproxy is not installed (apt-get install haproxy)")
    with _gateway("haproxy", [HAPROXY, "-db", "-f", str(config)], port, log or subprocess.DEVNULL) as process:
        yield process


@contextlib.contextmanager
def _gateway(name: str, argv: list[str], port: int, output: IO[bytes] | int) -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(argv, stdout=output, stderr=subprocess.PIPE)

    def why_not() -> str:
        process.kill()
        _, said = process.communicate()
        return f"{name} did not listen on port {port}: {said!r}"

    try:
        _until(process, lambda: _accepts(port), why_not)
        yield process
    finally:
        _stop(process)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def _until(process: subprocess.Popen[bytes], ready: Callable[[], bool], why_not: Callable[[], str]) -> None:
    """Wait until `ready()` (the service answers), failing with `why_not()` and the exit code once the process has
    exited or the kit's patience has run out: readiness, never a guessed sleep."""
    deadline = time.monotonic() + PATIENCE_S
    while not ready():
        if process.poll() is not None or time.monotonic() > deadline:
            message = why_not()
            raise RuntimeError(f"{message} (exit code {process.poll()})")
        time.sleep(0.02)


def _accepts(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0
