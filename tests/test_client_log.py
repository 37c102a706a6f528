"""Client logging over the real wire: logging/setLevel, then the call's classed lines as notifications/message.

Each server runs as a host runs it; the lines a client receives are the operator's classed lines, redacted and
without tracebacks, at the level that client chose, and only for its own calls.
"""

from __future__ import annotations

from pathlib import Path

from mcp_server_core.testing import StdioWire

from tests.conftest import SERVERS


def _messages(wire: StdioWire, until_tool: str) -> list[dict[str, object]]:
    """notifications/message received up to and including the first one about `until_tool`."""
    seen = []
    while True:
        note = wire.wait_for_notification("notifications/message")["params"]
        seen.append(note)
        if until_tool in str(note.get("data")):
            return seen


def test_a_client_gets_its_calls_classed_lines_at_the_level_it_chose(tmp_path: Path) -> None:
    with StdioWire(SERVERS["template"](tmp_path)) as wire:
        wire.initialize()
        # No level chosen: warnings and worse only, so a tool failure (INFO) is not sent.
        failed = wire.request("tools/call", {"name": "read_note", "arguments": {"name": "absent"}})["result"]
        assert failed["isError"]
        assert wire.request("logging/setLevel", {"level": "info"})["result"] == {}
        wire.request("tools/call", {"name": "delete_note", "arguments": {"name": "absent"}})
        messages = _messages(wire, "delete_note")
    assert all("read_note" not in str(m.get("data")) for m in messages), messages
    line = messages[-1]
    assert line["level"] == "info"
    assert "[tool failure]" in str(line["data"])
    assert "Traceback" not in str(line["data"])
    # The SDK marks its log method deprecated for 2026-07-28 clients; for this one (the handshake era) logging is
    # current, and the warning went raw to the operator's stderr at the first line sent.
    assert "deprecated" not in wire.stderr, wire.stderr[-1000:]


def test_a_client_that_asks_for_errors_only_gets_no_tool_failure_lines(tmp_path: Path) -> None:
    with StdioWire(SERVERS["template"](tmp_path)) as wire:
        wire.initialize()
        wire.request("logging/setLevel", {"level": "error"})
        wire.request("tools/call", {"name": "read_note", "arguments": {"name": "absent"}})
        wire.request("logging/setLevel", {"level": "info"})
        wire.request("tools/call", {"name": "delete_note", "arguments": {"name": "absent"}})
        messages = _messages(wire, "delete_note")
    assert all("read_note" not in str(m.get("data")) for m in messages), messages


def test_one_clients_level_and_lines_stay_its_own(tmp_path: Path) -> None:
    """Two clients of one HTTP server: the one that asked for info hears of its own failure, not the other's."""
    from mcp_server_core.testing import HttpWire, spawn_http_server

    with spawn_http_server(SERVERS["template"](tmp_path)) as (url, _process):
        listener, other = HttpWire(url), HttpWire(url)
        try:
            listener.initialize()
            other.initialize()
            listener.request("logging/setLevel", {"level": "info"})
            other.request("tools/call", {"name": "read_note", "arguments": {"name": "absent"}})
            answer = listener.post(
                {
                    "jsonrpc": "2.0",
                    "id": 9,
                    "method": "tools/call",
                    "params": {"name": "delete_note", "arguments": {"name": "absent"}},
                }
            )
            notes = [m for m in listener.messages(answer) if m.get("method") == "notifications/message"]
        finally:
            listener.close()
            other.close()
    assert notes, "the listener's own failure reaches it on its call's stream"
    assert all("read_note" not in str(n["params"]["data"]) for n in notes)
