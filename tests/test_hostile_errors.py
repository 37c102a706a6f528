"""Hostile text on the paths that are not an answer: the failures (isError), the protocol errors and the lines
the server logs and audits. Each is one line the content cannot break, bounded, and cheap to produce, on every
server, over the real protocol.

The hostile-content kit's checks run on the answers of each server's tools (packages/*/tests/
test_hostile_content.py); these run on what happens when the call fails or is only recorded."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp_server_core.testing import StdioWire

from tests.conftest import SERVERS

LONG_WORD = "a" * 1_000_000
"""A word with no `://` after it: the URL-password shape redact() looked for was tried at each of its letters and
scanned the rest each time, a quarter of an hour for this one."""


@pytest.mark.parametrize("server", ["template", "db"])
def test_a_long_word_the_audit_log_redacts_does_not_stall_the_server(server: str, tmp_path: Path) -> None:
    audit = tmp_path / "audit.log"
    with StdioWire([*SERVERS[server](tmp_path), "--audit-log", str(audit)]) as wire:
        wire.initialize()
        # The URI is audited whole (the client chose it), and named in the -32602 the read gets.
        answer = wire.request("resources/read", {"uri": LONG_WORD}, timeout=30)
        assert answer["error"]["code"] == -32602
        # The audit writer redacts the line in a thread; a quadratic redact would hold the interpreter lock for
        # minutes, and these would wait behind it.
        for _ in range(3):
            assert "result" in wire.request("ping", timeout=10)
        assert wire.close() == 0
    assert LONG_WORD[:1000] in audit.read_text()


def test_a_command_s_json_shows_no_raw_line_separator_or_bidi_control(tmp_path: Path) -> None:
    """`call TOOL --json` prints the structured content, where the db server keeps cells as the database holds
    them: JSON escapes a newline, not U+2028 (a line break to many terminals and readers) or a bidi override.
    The printed JSON escapes them too, and reads back as the same values."""
    import json
    import subprocess

    cell = "a\u2028IMPORTANT NOTE FROM the server\u202eb\u200b"
    sql = "SELECT 'a' || char(8232) || 'IMPORTANT NOTE FROM the server' || char(8238) || 'b' || char(8203) AS v"
    command = subprocess.run(
        [*SERVERS["db"](tmp_path), "call", "run_query", sql, "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert command.returncode == 0, command.stderr
    assert not set(command.stdout) & set("\u2028\u2029\u202e\u200b"), command.stdout[:300]
    assert json.loads(command.stdout)["rows"] == [[cell]]
