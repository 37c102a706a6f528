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


class Transcript:
    """One stdio session that prints every message; each step may carry a note saying what it shows."""

    def __init__(self, argv: list[str]) -> None:
        self.wire = StdioWire(argv, trace=show)

    def call(self, method: str, params: dict[str, Any] | None = None, note: str = "") -> dict[str, Any]:
        if note:
            print(f"# {note}")
        return self.wire.request(method, params)

    def tool(self, name: str, arguments: dict[str, Any], note: str) -> dict[str, Any]:
        return self.call("tools/call", {"name": name, "arguments": arguments}, note)

    def open(self, handshake_note: str, list_note: str) -> None:
        hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "demo", "version": "1"}}
        self.call("initialize", hello, handshake_note)
        self.wire.notify("notifications/initialized")
        tools = self.call("tools/list", note=list_note)["result"]["tools"]
        size = len(json.dumps(tools, separators=(",", ":")))
        print(f"# tools/list carries {len(tools)} tools in {size:,} bytes.\n")

    def close(self) -> int:
        print("# The client leaves: stdin closes and the server exits cleanly.")
        code = self.wire.close()
        print(f"# exit code {code}")
        self.wire.__exit__(None, None, None)
        return code


def database() -> int:
    session = Transcript(python_module("mcp_server_db"))
    session.open("No URL given: the server opens its bundled SQLite sample, read-only.", "What the model sees.")
    session.tool("find_objects", {"pattern": "order*", "detail": "summary"}, "Find what there is, at a chosen detail.")
    session.tool(
        "describe_tables",
        {"tables": ["customers"], "sample_rows": 3},
        "Describe a table with a few of its rows: keys both ways, checks, comments, indexes.",
    )
    session.call("resources/list", None, "The schema is also served as resources: an overview and one per table.")
    session.call("resources/read", {"uri": "db://tables/orders"}, "A table as a resource, the same compact text.")
    session.tool(
        "run_query",
        {
            "sql": "SELECT c.name, COUNT(*) AS orders, SUM(t.total_cents) / 100.0 AS spent FROM customers c "
            "JOIN order_totals t ON t.customer_id = c.id GROUP BY c.id ORDER BY spent DESC LIMIT :n",
            "params": {"n": 5},
        },
        "A read query with a bound parameter: compact rows plus structured content.",
    )
    session.tool("describe_tables", {"tables": ["ordrs"]}, "A typo the model can fix: isError with a did-you-mean.")
    session.tool(
        "run_query",
        {"sql": "SELECT 1; DROP TABLE customers"},
        "Read-only holds: a second statement is refused before it reaches the engine.",
    )
    session.tool("run_query", {"sql": "DELETE FROM orders"}, "So is any write.")
    return session.close()


def template() -> int:
    with tempfile.TemporaryDirectory() as folder:
        notes = Path(folder)
        (notes / "groceries").write_text("milk\neggs\nbread\n")
        (notes / "ideas").write_text("an MCP server for notes\nbenchmarks in a table\n")
        session = Transcript(python_module("mcp_server_template", "--notes-dir", folder))
        session.open(
            "The handshake: the server answers with its protocol version, capabilities and instructions.",
            "What the model sees: every tool with a title, annotations, schemas.",
        )
        session.tool("list_notes", {}, "A listing: compact text plus structured rows.")
        session.tool("search_notes", {"query": "bread"}, "Search finds lines.")
        session.tool("read_note", {"name": "grocerie"}, "A mistake the model can fix: isError with a did-you-mean.")
        session.tool(
            "write_note",
            {"name": "todo", "text": "try the db server"},
            "An atomic write; the new note is announced with resources/list_changed.",
        )
        session.tool("no_such_tool", {}, "An unknown tool is a protocol error.")
        session.wire.wait_for_notification("notifications/resources/list_changed")
        session.call("resources/read", {"uri": "note://todo"}, "Notes are resources too.")
        session.call("prompts/get", {"name": "summarize_notes", "arguments": {"topic": "food"}}, "A prompt.")
        return session.close()


if __name__ == "__main__":
    sys.exit(template() if sys.argv[1:] == ["template"] else database())
