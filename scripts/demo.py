"""`make demo`: a scripted MCP session over stdio, printing every message, like a transcript.

→ is what the client sends, ← what the server answers. `python scripts/demo.py` shows the database inspector
on its bundled SQLite sample (`make demo`); `python scripts/demo.py template` the template server on notes in
a temporary folder (`make demo-template`).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from mcp_server_core.testing.wire import StdioWire, python_module

WIDTH = 110


def show(arrow: str, message: dict[str, Any]) -> None:
    text = json.dumps(message, ensure_ascii=False)
    if len(text) > WIDTH * 4:
        text = text[: WIDTH * 4] + f" … ({len(text):,} bytes)"
    print(f"{arrow} {text}\n")


def database() -> int:
    with StdioWire(python_module("mcp_server_db"), trace=show) as wire:

        def call(method: str, params: dict[str, Any] | None = None, note: str = "") -> dict[str, Any]:
            if note:
                print(f"# {note}")
            return wire.request(method, params)

        def tool(name: str, arguments: dict[str, Any], note: str) -> dict[str, Any]:
            return call("tools/call", {"name": name, "arguments": arguments}, note)

        call(
            "initialize",
            {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "demo", "version": "1"}},
            "No URL given: the server opens its bundled SQLite sample, read-only.",
        )
        wire.notify("notifications/initialized")
        listed = call("tools/list", note="What the model sees.")
        size = len(json.dumps(listed["result"]["tools"], separators=(",", ":")))
        print(f"# tools/list carries {len(listed['result']['tools'])} tools in {size:,} bytes.\n")
        tool("find_objects", {"pattern": "order*", "detail": "summary"}, "Find what there is, at a chosen detail.")
        tool("describe_tables", {"tables": ["orders", "order_items"]}, "Describe several tables in one call.")
        tool(
            "run_query",
            {
                "sql": "SELECT c.name, COUNT(*) AS orders, SUM(t.total_cents) / 100.0 AS spent FROM customers c "
                "JOIN order_totals t ON t.customer_id = c.id GROUP BY c.id ORDER BY spent DESC LIMIT :n",
                "params": {"n": 5},
            },
            "A read query with a bound parameter: compact rows plus structured content.",
        )
        tool("describe_tables", {"tables": ["ordrs"]}, "A typo the model can fix: isError with a did-you-mean.")
        tool(
            "run_query",
            {"sql": "SELECT 1; DROP TABLE customers"},
            "Read-only holds: a second statement is refused before it reaches the engine.",
        )
        tool("run_query", {"sql": "DELETE FROM orders"}, "So is any write.")
        print("# The client leaves: stdin closes and the server exits cleanly.")
        code = wire.close()
        print(f"# exit code {code}")
        return code


def template() -> int:
    with tempfile.TemporaryDirectory() as folder:
        notes = Path(folder)
        (notes / "groceries").write_text("milk\neggs\nbread\n")
        (notes / "ideas").write_text("an MCP server for notes\nbenchmarks in a table\n")
        with StdioWire(python_module("mcp_server_template", "--notes-dir", folder), trace=show) as wire:

            def call(method: str, params: dict[str, Any] | None = None, note: str = "") -> dict[str, Any]:
                if note:
                    print(f"# {note}")
                return wire.request(method, params)

            call(
                "initialize",
                {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "demo", "version": "1"}},
                "The handshake: the server answers with its protocol version, capabilities and instructions.",
            )
            wire.notify("notifications/initialized")
            listed = call("tools/list", note="What the model sees: every tool with a title, annotations, schemas.")
            size = len(json.dumps(listed["result"]["tools"], separators=(",", ":")))
            print(f"# tools/list carries {len(listed['result']['tools'])} tools in {size:,} bytes.\n")
            call("tools/call", {"name": "list_notes", "arguments": {}}, "A listing: compact text plus structured rows.")
            call("tools/call", {"name": "search_notes", "arguments": {"query": "bread"}}, "Search finds lines.")
            call(
                "tools/call",
                {"name": "read_note", "arguments": {"name": "grocerie"}},
                "A mistake the model can fix: isError with a did-you-mean.",
            )
            call(
                "tools/call",
                {"name": "write_note", "arguments": {"name": "todo", "text": "try the db server"}},
                "An atomic write; the new note is announced with resources/list_changed.",
            )
            call("tools/call", {"name": "no_such_tool", "arguments": {}}, "An unknown tool is a protocol error.")
            wire.wait_for_notification("notifications/resources/list_changed")
            call("resources/read", {"uri": "note://todo"}, "Notes are resources too.")
            call("prompts/get", {"name": "summarize_notes", "arguments": {"topic": "food"}}, "A prompt.")
            print("# The client leaves: stdin closes and the server exits cleanly.")
            code = wire.close()
            print(f"# exit code {code}")
            return code


if __name__ == "__main__":
    sys.exit(template() if sys.argv[1:] == ["template"] else database())
