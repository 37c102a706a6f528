"""The servers behind nginx, configured as docs/deploy.md says: the gateway page's config, exercised.

Skipped when nginx is not installed (`apt-get install nginx`); nginx runs in the foreground from a config in
a temporary folder, never as the system service.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from mcp_server_core.testing import NGINX, HttpWire, nginx, python_module, spawn_http_server

from tests.conftest import SERVERS, change_trigger, first_event_on_get_stream
from tests.test_workers import CLIENTS

pytestmark = pytest.mark.skipif(NGINX is None, reason="nginx is not installed (apt-get install nginx)")

LOCATION = """
    location /mcp {{
        proxy_pass http://{upstream}/mcp;
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_set_header Host $host;
        proxy_buffering off;
        proxy_read_timeout 300s;
    }}
"""
"""The `location /mcp` block of docs/deploy.md, with the upstream's address filled in."""
LIMITS = """
    client_max_body_size 8m;
    client_body_buffer_size 8m;
"""
"""docs/deploy.md's body limit: a larger body stops at the gateway (413) before any server reads it."""


@contextlib.contextmanager
def gateway(folder: Path, upstream_url: str) -> Iterator[str]:
    """nginx in front of the server at `upstream_url`; yields the gateway's endpoint URL."""
    with nginx(LOCATION.format(upstream=urlsplit(upstream_url).netloc), http=LIMITS, folder=folder) as base:
        yield f"{base}/mcp"


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
        with first_event_on_get_stream(url, wire.session_id) as heard:
            time.sleep(0.2)
            assert wire.request("tools/call", {"name": tool, "arguments": arguments})["result"]["isError"] is False
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
