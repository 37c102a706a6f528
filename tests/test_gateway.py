"""The servers behind nginx, configured as docs/deploy.md says: the gateway page's config, exercised.

Skipped when nginx is not installed (`apt-get install nginx`); nginx runs in the foreground from a config in
a temporary folder, never as the system service.
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx2
import pytest
from mcp_server_core.testing import NGINX, HttpWire, free_port, python_module, spawn_http_server

from tests.conftest import SERVERS, change_trigger
from tests.test_workers import CLIENTS

pytestmark = pytest.mark.skipif(NGINX is None, reason="nginx is not installed (apt-get install nginx)")

LOCATION = """
    location /mcp {{
        proxy_pass http://127.0.0.1:{upstream}/mcp;
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_set_header Host $host;
        proxy_buffering off;
        proxy_read_timeout 300s;
    }}
"""
"""The `location /mcp` block of docs/deploy.md, with the upstream port filled in."""


@contextlib.contextmanager
def gateway(folder: Path, upstream_url: str) -> Iterator[str]:
    """nginx in front of the server at `upstream_url`; yields the gateway's endpoint URL."""
    port = free_port()
    process = _start(port, folder, _port(upstream_url))
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        _stop(process)


def _start(port: int, folder: Path, upstream: int) -> subprocess.Popen[bytes]:
    assert NGINX is not None
    folder.mkdir(exist_ok=True)
    config = folder / "nginx.conf"
    config.write_text(
        f"""
worker_processes 1;
pid {folder}/nginx.pid;
error_log {folder}/error.log warn;
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {folder}/body;
    proxy_temp_path {folder}/proxy;
    fastcgi_temp_path {folder}/fastcgi;
    uwsgi_temp_path {folder}/uwsgi;
    scgi_temp_path {folder}/scgi;
    client_max_body_size 8m;
    client_body_buffer_size 8m;
    server {{
        listen 127.0.0.1:{port};
        {LOCATION.format(upstream=upstream)}
    }}
}}
"""
    )
    process = subprocess.Popen(
        [NGINX, "-p", str(folder), "-c", str(config), "-g", "daemon off;"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"nginx exited: {process.stderr.read().decode() if process.stderr else ''}")
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return process
        time.sleep(0.05)
    process.kill()
    raise AssertionError("nginx did not listen")


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    if process.stderr is not None:
        process.stderr.close()


def _port(url: str) -> int:
    return int(url.split(":")[2].split("/")[0])


def test_stateless_workers_behind_nginx_answer_every_call(tmp_path: Path) -> None:
    argv = python_module("mcp_server_db", "--stateless", "--workers", "2", "--schema-poll-s", "0")
    argv += ["--allowed-host", "mcp.test"]
    with spawn_http_server(argv) as (upstream, _process), gateway(tmp_path / "nginx", upstream) as url:

        def call(n: int) -> bool:
            with HttpWire(url, headers={"Host": "mcp.test"}) as wire:
                arguments = {"sql": "SELECT :n AS n", "params": {"n": n}}
                result = wire.modern_request("tools/call", {"name": "run_query", "arguments": arguments})
                return result["result"]["structuredContent"]["rows"] == [[n]]

        with ThreadPoolExecutor(CLIENTS) as pool:
            assert all(pool.map(call, range(120)))
        # A Host the server was not told about is refused through the gateway too (DNS rebinding).
        with HttpWire(url, headers={"Host": "other.test"}) as stranger:
            assert stranger.post({"jsonrpc": "2.0", "id": 1, "method": "ping"}).status_code == 421


def test_a_session_works_through_nginx_streams_included(tmp_path: Path) -> None:
    tool, arguments = change_trigger("template")
    with (
        spawn_http_server(SERVERS["template"](tmp_path)) as (upstream, _process),
        gateway(tmp_path / "nginx", upstream) as url,
        HttpWire(url) as wire,
    ):
        wire.initialize()
        assert wire.session_id
        heard: list[dict[str, object]] = []
        opened = threading.Event()

        def listen() -> None:
            headers = {"Accept": "text/event-stream", "Mcp-Session-Id": wire.session_id or ""}
            with httpx2.stream("GET", url, headers=headers, timeout=15) as stream:
                opened.set()
                for line in stream.iter_lines():
                    if line.startswith("data:"):
                        heard.append(json.loads(line[5:]))
                        return

        listener = threading.Thread(target=listen, daemon=True)
        listener.start()
        assert opened.wait(10)
        time.sleep(0.2)
        assert wire.request("tools/call", {"name": tool, "arguments": arguments})["result"]["isError"] is False
        listener.join(10)
        assert heard, "the GET stream's notification did not come through the gateway"
        assert heard[0]["method"] == "notifications/resources/list_changed"


def test_an_oversized_body_is_refused_at_the_gateway(tmp_path: Path) -> None:
    with (
        spawn_http_server(SERVERS["template"](tmp_path)) as (upstream, _process),
        gateway(tmp_path / "nginx", upstream) as url,
        HttpWire(url) as wire,
    ):
        refused = wire.post(b"x" * (9 * 1024 * 1024))
        assert refused.status_code == 413
        assert "result" in wire.initialize()
