"""/healthz and /readyz on every server's HTTP front: for load balancers, without a token, saying little."""

from __future__ import annotations

import os
from pathlib import Path

import httpx2
from mcp_server_core.testing import free_port, python_module, spawn_http_server

TOKEN = "health-test-token-" + "h" * 40


def _base(url: str) -> str:
    return url.removesuffix("/mcp")


def test_every_server_is_alive_and_says_whether_it_is_ready(http_server: tuple[str, str]) -> None:
    name, url = http_server
    alive = httpx2.get(_base(url) + "/healthz")
    ready = httpx2.get(_base(url) + "/readyz", timeout=15)
    assert alive.status_code == 200
    assert alive.json() == {"status": "ok"}
    assert alive.headers["cache-control"] == "no-store"
    if name == "github":  # conftest points it at a port where nothing listens
        assert ready.status_code == 503
        assert ready.json() == {"status": "unavailable", "reason": "GitHub is not usable now"}
        assert ready.headers["retry-after"] == "5"
    else:
        assert ready.status_code == 200, ready.text
        assert ready.json() == {"status": "ready"}


def test_readiness_follows_the_database_and_names_no_host(tmp_path: Path) -> None:
    gone = f"postgresql+psycopg://ops:pw@127.0.0.1:{free_port()}/nothing"
    argv = python_module("mcp_server_db", gone, "--schema-poll-s", "0")
    env = {**os.environ, "MCP_DB_AUTH_TOKEN": TOKEN}
    with spawn_http_server(argv, env=env) as (url, _process):
        ready = httpx2.get(_base(url) + "/readyz", timeout=15)
        anonymous_mcp = httpx2.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert ready.status_code == 503, "a probe needs no token, and the database is down"
    assert ready.json() == {"status": "unavailable", "reason": "the database is not usable now"}
    assert "127.0.0.1" not in ready.text
    assert anonymous_mcp.status_code == 401, "the MCP endpoint itself still wants its token"
