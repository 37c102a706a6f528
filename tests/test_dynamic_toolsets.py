"""`--toolsets dynamic` on every server: two small tools at start, the rest switched on by the session itself.

Spoken over stdio as a host speaks: the resident tools, then list_toolsets, enable_toolset, the
tools/list_changed notification, and the tools that arrived.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from mcp_server_core.testing import StdioWire

from tests.conftest import SERVERS

DISCOVERY = {"list_toolsets", "enable_toolset"}


def _names(wire: StdioWire) -> set[str]:
    return {t["name"] for t in wire.request("tools/list", {})["result"]["tools"]}


def _text(answer: dict[str, object]) -> str:
    result = answer["result"]
    assert isinstance(result, dict)
    assert not result.get("isError"), result
    return "\n".join(block["text"] for block in result["content"])


@pytest.mark.parametrize("server", sorted(SERVERS))
def test_dynamic_starts_with_the_discovery_pair_and_a_session_switches_the_rest_on(server: str, tmp_path: Path) -> None:
    with StdioWire([*SERVERS[server](tmp_path), "--toolsets", "dynamic"]) as wire:
        wire.initialize()
        resident = _names(wire)
        assert resident >= DISCOVERY
        assert len(resident) <= len(DISCOVERY) + 1, resident  # github keeps get_me beside the pair
        listing = _text(wire.request("tools/call", {"name": "list_toolsets", "arguments": {}}))
        off = re.search(r"^(\S+) \(off\): .*Tools: (.+)$", listing, re.M)
        assert off, listing
        name, tools = off.group(1), set(off.group(2).split(", "))
        enabled = _text(wire.request("tools/call", {"name": "enable_toolset", "arguments": {"name": name}}))
        assert f"Toolset {name} is now on" in enabled
        wire.wait_for_notification("notifications/tools/list_changed")
        assert _names(wire) == resident | tools


def test_dynamic_on_a_stateless_server_serves_the_default_toolsets(tmp_path: Path) -> None:
    """Without sessions nothing could switch a toolset on later: the defaults are served from the start."""
    from mcp_server_core.testing import HttpWire, spawn_http_server

    argv = [*SERVERS["db"](tmp_path), "--toolsets", "dynamic", "--transport", "http", "--stateless"]
    with spawn_http_server(argv) as (url, _process):
        wire = HttpWire(url)
        try:
            wire.initialize()
            names = {t["name"] for t in wire.request("tools/list", {})["result"]["tools"]}
        finally:
            wire.close()
    assert "run_query" in names
    assert not names & DISCOVERY


@pytest.mark.parametrize("server", ["db", "github"])
def test_a_2026_client_hears_its_toolset_choice_on_its_listen_stream(server: str, tmp_path: Path) -> None:
    """The 2026-07-28 era has no session: the choice is the principal's (over stdio, the one client the process
    serves), and the `subscriptions/listen` stream it opened carries the tools/list_changed for it."""
    from mcp_server_core.testing.wire import with_envelope

    with StdioWire([*SERVERS[server](tmp_path), "--toolsets", "dynamic"]) as wire:
        listen = with_envelope({"notifications": {"toolsListChanged": True}})
        wire.send({"jsonrpc": "2.0", "id": "listen", "method": "subscriptions/listen", "params": listen})
        wire.wait_for_notification("notifications/subscriptions/acknowledged")
        resident = {t["name"] for t in wire.modern_request("tools/list", {})["result"]["tools"]}
        listing = _text(wire.modern_request("tools/call", {"name": "list_toolsets", "arguments": {}}))
        off = re.search(r"^(\S+) \(off\): .*Tools: (.+)$", listing, re.M)
        assert off, listing
        name, tools = off.group(1), set(off.group(2).split(", "))
        wire.notifications.clear()
        enabled = _text(wire.modern_request("tools/call", {"name": "enable_toolset", "arguments": {"name": name}}))
        assert f"Toolset {name} is now on" in enabled
        while True:  # the one on the listen stream, tagged with its subscription id
            heard = wire.wait_for_notification("notifications/tools/list_changed")
            if heard.get("params", {}).get("_meta", {}).get("io.modelcontextprotocol/subscriptionId") == "listen":
                break
        assert {t["name"] for t in wire.modern_request("tools/list", {})["result"]["tools"]} == resident | tools
