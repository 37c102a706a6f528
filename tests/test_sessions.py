"""State that belongs to one session stays in it, and a server without sessions promises only what it delivers.

Over real HTTP against spawned servers: toolsets one session switches on are that session's alone; with
`--stateless` (one process or several workers behind nginx) initialize and server/discover advertise no
notification a stateless POST could never carry, subscribing is refused as a method this server does not
serve, and (its callers carrying no credential) the discovery tools are absent, so every request sees one tool list
whichever worker answers it. A stateless server whose callers have credentials: tests/test_stateless_toolsets.py.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from mcp_server_core.testing import NGINX, HttpWire, python_module, spawn_http_server

from tests.conftest import SERVERS
from tests.test_gateway import gateway

METHOD_NOT_FOUND, INVALID_PARAMS = -32601, -32602
GITHUB = python_module("mcp_server_github", "--api-url", "http://127.0.0.1:9")
DISCOVERY = {"list_toolsets", "enable_toolset"}


def _tool_names(wire: HttpWire) -> set[str]:
    return {t["name"] for t in wire.request("tools/list")["result"]["tools"]}


def test_a_toolset_one_http_session_enables_is_not_in_another_sessions_list() -> None:
    with spawn_http_server(GITHUB) as (url, _process), HttpWire(url) as a, HttpWire(url) as b:
        a.initialize()
        b.initialize()
        before = _tool_names(b)
        enabled = a.request("tools/call", {"name": "enable_toolset", "arguments": {"name": "search"}})
        assert enabled["result"]["isError"] is False, enabled
        added = _tool_names(a) - before
        assert "search_code" in added
        assert _tool_names(b) == before, "one session's choice changed another session's tools"
        refused = b.request("tools/call", {"name": "search_code", "arguments": {"query": "x"}})
        assert refused["error"]["code"] == INVALID_PARAMS
        # A fresh session starts from the server-wide baseline, not from what earlier sessions chose.
        with HttpWire(url) as c:
            c.initialize()
            assert _tool_names(c) == before


@pytest.mark.parametrize("server", sorted(SERVERS))
def test_a_stateless_server_advertises_no_notification_it_cannot_send(server: str, tmp_path: Path) -> None:
    argv = [*SERVERS[server](tmp_path), "--stateless"]
    with spawn_http_server(argv) as (url, _process), HttpWire(url) as wire:
        capabilities = wire.initialize()["result"]["capabilities"]
        discovered = wire.modern_request("server/discover", {})["result"]["capabilities"]
        subscribe = wire.request("resources/subscribe", {"uri": "file:///x"})
        listen = wire.modern_request("subscriptions/listen", {"notifications": {"toolsListChanged": True}})
        names = _tool_names(wire)
    for advertised in (capabilities, discovered):
        for kind in ("tools", "resources", "prompts"):
            assert not advertised.get(kind, {}).get("listChanged"), (kind, advertised)
        assert not advertised.get("resources", {}).get("subscribe"), advertised
    assert subscribe["error"]["code"] == METHOD_NOT_FOUND
    assert listen["error"]["code"] == METHOD_NOT_FOUND
    assert not names & DISCOVERY


def test_stateful_http_still_advertises_and_serves_notifications(tmp_path: Path) -> None:
    with spawn_http_server(SERVERS["template"](tmp_path)) as (url, _process), HttpWire(url) as wire:
        capabilities = wire.initialize()["result"]["capabilities"]
    assert capabilities["tools"]["listChanged"] is True
    assert capabilities["resources"]["subscribe"] is True


@pytest.mark.skipif(NGINX is None, reason="nginx is not installed (apt-get install nginx)")
def test_stateless_workers_behind_nginx_give_every_request_one_tool_list(tmp_path: Path) -> None:
    argv = [*GITHUB, "--stateless", "--workers", "2"]
    with spawn_http_server(argv) as (upstream, _process), gateway(tmp_path / "nginx", upstream) as url:

        def listing(_: int) -> frozenset[str]:
            with HttpWire(url) as wire:
                refused = wire.modern_request("tools/call", {"name": "enable_toolset", "arguments": {"name": "search"}})
                assert refused["error"]["code"] == INVALID_PARAMS
                return frozenset(t["name"] for t in wire.modern_request("tools/list")["result"]["tools"])

        with ThreadPoolExecutor(8) as pool:
            seen = set(pool.map(listing, range(40)))
    assert len(seen) == 1, seen
    (names,) = seen
    assert not names & DISCOVERY
