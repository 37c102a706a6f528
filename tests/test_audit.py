"""The audit trail (--audit-log): one line per call, read and prompt, each valid against docs/audit.schema.json,
naming the outcome class a security team needs, and never a secret."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import jsonschema
from mcp_server_core.auth.identity import token_fingerprint
from mcp_server_core.testing import HttpWire, StdioWire, spawn_http_server

from tests.conftest import ROOT, SERVERS

SCHEMA = json.loads((ROOT / "docs" / "audit.schema.json").read_text())
TOKEN = "audit-test-token-" + "k" * 40
SLOW_SQL = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 300000000) SELECT count(*) FROM c"


def _lines(path: Path) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for line in lines:
        jsonschema.validate(line, SCHEMA)
    return lines


def test_every_kind_of_outcome_has_its_line_over_stdio(tmp_path: Path) -> None:
    audit = tmp_path / "audit.log"
    argv = [*SERVERS["template"](tmp_path), "--audit-log", str(audit)]
    with StdioWire(argv) as wire:
        wire.initialize()
        wire.request("tools/call", {"name": "write_note", "arguments": {"name": "plan", "text": "secret-ish text"}})
        wire.request("tools/call", {"name": "read_note", "arguments": {"name": "missing"}})
        wire.request("tools/call", {"name": "read_note", "arguments": {"name": 12}})
        wire.request("tools/call", {"name": "no_such_tool", "arguments": {}})
        wire.request("resources/read", {"uri": "note://plan"})
        wire.request("prompts/get", {"name": "summarize_notes", "arguments": {"topic": "x"}})
        wire.request("tools/list")  # not audited: it changes nothing and names nothing
        assert wire.close() == 0
    lines = _lines(audit)
    assert [(line["method"], line.get("name") or line.get("uri"), line["outcome"]) for line in lines] == [
        ("tools/call", "write_note", "ok"),
        ("tools/call", "read_note", "tool_error"),
        ("tools/call", "read_note", "tool_error"),
        ("tools/call", "no_such_tool", "protocol_error"),
        ("resources/read", "note://plan", "ok"),
        ("prompts/get", "summarize_notes", "ok"),
    ]
    write, missing, malformed, unknown = lines[:4]
    assert write["targets"] == ["note://plan"]
    assert write["transport"] == "stdio"
    assert write["principal"] == "local"
    assert write["client"]["name"]
    assert missing["category"] == "not_found"
    assert malformed["category"] == "invalid_argument"
    assert unknown["code"] == -32602
    assert all(line["duration_ms"] >= 0 and line["bytes"] >= 0 for line in lines)
    assert "secret-ish" not in audit.read_text(), "arguments appear as a digest unless --audit-arguments"


def test_guards_and_deadlines_are_their_own_outcomes(tmp_path: Path) -> None:
    audit = tmp_path / "audit.log"
    # 3 s: the guard's first parse imports the SQL parser, over a second on a loaded machine.
    argv = [*SERVERS["db"](tmp_path), "--read-only", "--call-timeout-s", "3", "--audit-log", str(audit)]
    with StdioWire(argv) as wire:
        wire.initialize()
        wire.request("tools/call", {"name": "run_query", "arguments": {"sql": "DELETE FROM customers"}})
        wire.request("tools/call", {"name": "run_query", "arguments": {"sql": SLOW_SQL}}, timeout=30)
        wire.close()
    refused, timed_out = _lines(audit)
    assert (refused["outcome"], refused["category"]) == ("refused", "refused")
    assert timed_out["outcome"] == "timeout"


def test_over_http_the_principal_is_never_the_token_and_arguments_are_opt_in(tmp_path: Path) -> None:
    audit = tmp_path / "audit.log"
    argv = [*SERVERS["template"](tmp_path), "--audit-log", str(audit), "--audit-arguments"]
    env = {**os.environ, "MCP_TEMPLATE_AUTH_TOKEN": TOKEN}
    with spawn_http_server(argv, env=env) as (url, _process), HttpWire(url, token=TOKEN) as wire:
        wire.initialize()
        wire.request("tools/call", {"name": "write_note", "arguments": {"name": "n", "text": f"token {TOKEN}"}})
    (line,) = _lines(audit)
    assert line["transport"] == "streamable-http"
    assert line["session"]
    # The token's fingerprint, whole: a redacted "token:***" would make every caller the same principal.
    assert line["principal"] == token_fingerprint(TOKEN)
    assert TOKEN not in audit.read_text()
    assert json.loads(line["arguments"])["name"] == "n"


def test_a_database_write_names_its_table(tmp_path: Path) -> None:
    audit = tmp_path / "audit.log"
    with StdioWire([*SERVERS["db"](tmp_path), "--audit-log", str(audit)]) as wire:
        wire.initialize()
        sql = "CREATE TABLE audited_table (id INTEGER PRIMARY KEY)"
        assert (
            wire.request("tools/call", {"name": "execute_statement", "arguments": {"sql": sql}})["result"]["isError"]
            is False
        )
        wire.close()
    (line,) = _lines(audit)
    assert line["targets"] == ["table:audited_table"]
