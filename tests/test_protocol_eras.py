"""Clients of both protocol eras get served: the initialize handshake (2024-11-05 .. 2025-11-25) and the
stateless 2026-07-28 revision, whose every request carries its envelope and whose discovery is server/discover.
"""

from __future__ import annotations

from pathlib import Path

from mcp_server_core.testing import StdioWire
from mcp_server_core.testing.wire import with_envelope
from mcp_types.version import LATEST_MODERN_VERSION

from tests.conftest import SERVERS, change_trigger

INVALID_PARAMS, UNSUPPORTED_PROTOCOL_VERSION = -32602, -32022


def test_server_discover_answers_without_a_handshake(stdio: StdioWire) -> None:
    result = stdio.modern_request("server/discover")["result"]
    assert LATEST_MODERN_VERSION in result["supportedVersions"]
    assert result["capabilities"]["tools"]["listChanged"] is True
    assert result["capabilities"]["resources"]["subscribe"] is True


def test_a_modern_client_lists_and_calls_tools_with_no_handshake(stdio: StdioWire) -> None:
    tools = stdio.modern_request("tools/list")["result"]["tools"]
    assert tools
    unknown = stdio.modern_request("tools/call", {"name": "no_such_tool", "arguments": {}})
    assert unknown["error"]["code"] == INVALID_PARAMS


def test_a_connection_keeps_the_era_it_opened_with(stdio: StdioWire) -> None:
    stdio.modern_request("tools/list")
    refused = stdio.request(
        "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    )
    assert refused["error"]["code"] == UNSUPPORTED_PROTOCOL_VERSION
    assert LATEST_MODERN_VERSION in refused["error"]["data"]["supported"]


def test_a_modern_request_without_its_envelope_says_what_is_missing(stdio: StdioWire) -> None:
    stdio.modern_request("tools/list")
    error = stdio.request("tools/list")["error"]
    assert error["code"] == INVALID_PARAMS
    assert "protocolVersion" in error["message"]


def test_a_modern_client_hears_list_changed_on_its_listen_stream(stdio: StdioWire, server_name: str) -> None:
    tool, arguments = change_trigger(server_name)
    listen_id = 900
    stdio.send(
        {
            "jsonrpc": "2.0",
            "id": listen_id,
            "method": "subscriptions/listen",
            "params": {
                "notifications": {"resourcesListChanged": True},
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": LATEST_MODERN_VERSION,
                    "io.modelcontextprotocol/clientCapabilities": {},
                },
            },
        }
    )
    ack = stdio.wait_for_notification("notifications/subscriptions/acknowledged")
    assert ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == listen_id
    stdio.modern_request("tools/call", {"name": tool, "arguments": arguments})
    changed = stdio.wait_for_notification("notifications/resources/list_changed")
    assert changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == listen_id


def test_a_modern_client_hears_a_subscribed_file_change_on_its_listen_stream(tmp_path: Path) -> None:
    """The filesystem watcher watches what listen streams asked for, as it does for resources/subscribe."""
    watched = tmp_path / "watched.txt"
    watched.write_text("one\n")
    with StdioWire(SERVERS["filesystem"](tmp_path)) as wire:
        wire.send(
            {
                "jsonrpc": "2.0",
                "id": 901,
                "method": "subscriptions/listen",
                "params": with_envelope({"notifications": {"resourceSubscriptions": [watched.as_uri()]}}),
            }
        )
        wire.wait_for_notification("notifications/subscriptions/acknowledged")
        watched.write_text("two\n")
        updated = wire.wait_for_notification("notifications/resources/updated", timeout=15)
    assert updated["params"]["uri"] == watched.as_uri()
    assert updated["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 901


def test_an_open_listen_stream_does_not_hold_the_exit_when_stdin_closes(tmp_path: Path) -> None:
    """A listen stream owes no answer: it ends when its client leaves. Counted among the requests to drain,
    it held every exit for the whole drain bound (60 s here; 10 s by default)."""
    with StdioWire([*SERVERS["template"](tmp_path), "--drain-timeout-s", "60"]) as wire:
        wire.send(
            {
                "jsonrpc": "2.0",
                "id": 901,
                "method": "subscriptions/listen",
                "params": with_envelope({"notifications": {"resourcesListChanged": True}}),
            }
        )
        wire.wait_for_notification("notifications/subscriptions/acknowledged")
        assert wire.close(timeout=30) == 0
