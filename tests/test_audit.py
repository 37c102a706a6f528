"""The audit trail (--audit-log): one line per call, read and prompt, each valid against docs/audit.schema.json,
naming the outcome class a security team needs, and never a secret."""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import json
import logging
import os
import select
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import httpx2
import jsonschema
import pytest
from fastmcp import Client
from mcp_server_core.auth.identity import token_fingerprint
from mcp_server_core.conventions.errors import register_secret
from mcp_server_core.operations.audit import AUDIT_LOGGER, configure_audit_log, flush_audit_log
from mcp_server_core.operations.metrics import call_metrics
from mcp_server_core.testing import HttpWire, StdioWire, spawn_http_server
from mcp_server_template.server import build_server
from mcp_server_template.settings import TemplateSettings
from prometheus_client import REGISTRY

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
        metrics = url.removesuffix("/mcp") + "/metrics"
        scraped = httpx2.get(metrics, headers={"Authorization": f"Bearer {TOKEN}"})
    (line,) = _lines(audit)
    assert line["transport"] == "streamable-http"
    assert line["session"]
    # The token's fingerprint, whole: a redacted "token:***" would make every caller the same principal.
    assert line["principal"] == token_fingerprint(TOKEN)
    assert TOKEN not in audit.read_text()
    assert json.loads(line["arguments"])["name"] == "n"
    assert "mcp_audit_dropped_total 0.0" in scraped.text.splitlines()


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


def _pipe_nobody_reads(path: Path) -> int:
    """A FIFO with a reader that reads nothing, at the kernel's smallest pipe size: a few lines fill it, and
    every later write to it waits (what a full disk, or a stderr nobody reads, does to a writer)."""
    os.mkfifo(path)
    reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    fcntl.fcntl(reader, fcntl.F_SETPIPE_SZ, 4096)
    return reader


class _Drain(threading.Thread):
    """Reads the FIFO from now on, as a destination that took writes again would."""

    def __init__(self, reader: int) -> None:
        super().__init__(daemon=True)
        self.reader = reader
        self.data = bytearray()
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            if select.select([self.reader], [], [], 0.05)[0]:
                try:
                    self.data += os.read(self.reader, 65536)
                except BlockingIOError:
                    continue

    def finish(self) -> str:
        self.stop.set()
        self.join()
        with contextlib.suppress(BlockingIOError):
            self.data += os.read(self.reader, 65536)
        return self.data.decode()


CALLS = 60


async def test_a_destination_that_takes_no_lines_never_holds_a_call_and_every_lost_line_is_counted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    fifo = tmp_path / "audit.fifo"
    reader = _pipe_nobody_reads(fifo)
    server = build_server(TemplateSettings(notes_dir=tmp_path / "notes"))
    server.audit.include_arguments = True
    server.audit.metrics = call_metrics()  # what the HTTP transport does: drops are counted for /metrics
    register_secret(TOKEN)  # as a server does with its own token from its settings
    counted_before = REGISTRY.get_sample_value("mcp_audit_dropped_total") or 0.0
    configure_audit_log(str(fifo), max_queued_lines=4)
    caplog.set_level(logging.WARNING, logger=AUDIT_LOGGER)
    try:
        with anyio.fail_after(60):  # a call waiting on the audit log would hang here, not merely be slow
            async with Client(server) as client:
                for n in range(CALLS):
                    await client.call_tool("write_note", {"name": f"n{n}", "text": f"token {TOKEN} " + "x" * 2000})
        dropped = (REGISTRY.get_sample_value("mcp_audit_dropped_total") or 0.0) - counted_before
        assert dropped > 0
        drain = _Drain(reader)
        drain.start()
        assert await anyio.to_thread.run_sync(flush_audit_log, 30.0)  # the destination takes lines again
        text = drain.finish()
    finally:
        configure_audit_log(None)
        os.close(reader)
    lines = [json.loads(line) for line in text.splitlines()]
    for line in lines:
        jsonschema.validate(line, SCHEMA)
    assert len(lines) + dropped == CALLS, "every line is written or counted as dropped"
    assert TOKEN not in text, "lines are redacted by the writer, before they reach the destination"
    assert all(json.loads(line["arguments"])["text"].startswith("token ") for line in lines)
    # One warning per burst of drops: each is followed by the lines being queued again before the next.
    warnings = [r.getMessage() for r in caplog.records if r.name == AUDIT_LOGGER and r.levelno == logging.WARNING]
    bursts = [m for m in warnings if "dropping audit lines" in m]
    assert 1 <= len(bursts) <= dropped
    kinds = ["drop" if "dropping" in m else "again" for m in warnings if "dropping" in m or "queued again" in m]
    assert all(a != b for a, b in itertools.pairwise(kinds)), kinds


def test_a_stuck_destination_neither_holds_calls_nor_the_exit_over_stdio(tmp_path: Path) -> None:
    fifo = tmp_path / "audit.fifo"
    reader = _pipe_nobody_reads(fifo)
    try:
        argv = [*SERVERS["template"](tmp_path), "--audit-log", str(fifo), "--audit-arguments"]
        with StdioWire(argv) as wire:
            wire.initialize()
            for n in range(20):  # each line over 4 KiB: the pipe is full after the first
                answer = wire.request(
                    "tools/call", {"name": "write_note", "arguments": {"name": f"n{n}", "text": "x" * 5000}}
                )
                assert answer["result"]["isError"] is False
            assert wire.close() == 0  # within the wire's bound: the flush at exit gives up after FLUSH_TIMEOUT_S
            stderr = wire.stderr
    finally:
        os.close(reader)
    assert "lines left unwritten" in stderr


def _workers_of(pid: int, count: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with open(f"/proc/{pid}/task/{pid}/children") as listing:
            if len(listing.read().split()) == count:
                return
        time.sleep(0.1)
    raise AssertionError(f"{count} workers did not start")


def test_forked_workers_each_write_whole_lines_to_the_one_file(tmp_path: Path) -> None:
    audit = tmp_path / "audit.log"
    argv = [*SERVERS["template"](tmp_path), "--stateless", "--workers", "2", "--audit-log", str(audit)]
    argv += ["--audit-arguments"]

    def call(n: int) -> bool:
        with HttpWire(url) as wire:
            wire.protocol_version = "2025-11-25"  # handshake era, stateless: no session needed
            text = f"note {n} " + "y" * 3000  # lines near the 4 KiB write: an interleaving would tear them
            answer = wire.request("tools/call", {"name": "write_note", "arguments": {"name": f"n{n}", "text": text}})
            return answer["result"]["isError"] is False

    with spawn_http_server(argv) as (url, process):
        _workers_of(process.pid, 2)  # the writer thread of each is made after its fork
        with ThreadPoolExecutor(8) as pool:
            assert all(pool.map(call, range(40)))
    lines = _lines(audit)  # SIGTERM's drain flushed both workers' queues; each line parses and validates
    assert sorted(json.loads(line["arguments"])["name"] for line in lines) == sorted(f"n{n}" for n in range(40))
