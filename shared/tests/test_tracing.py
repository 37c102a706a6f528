"""Traces: the family's attributes on fastmcp's span of each call, one trace per call, no argument value or
secret in any attribute; and OTEL_* in the environment wires an exporter (console here, stderr only)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastmcp import Client
from mcp_server_core.testing import StdioWire, recorded_spans
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from .conftest import SECRET, build

ARGUMENT = "a-value-only-the-arguments-hold"


@pytest.fixture(scope="module")
def spans() -> Iterator[InMemorySpanExporter]:
    with recorded_spans() as exporter:
        yield exporter


def _attributes(span: ReadableSpan) -> dict[str, object]:
    return dict(span.attributes or {})


async def test_each_call_is_one_trace_carrying_the_familys_attributes(spans: InMemorySpanExporter) -> None:
    spans.clear()
    async with Client(build(), mode="legacy") as client:
        await client.call_tool("add_numbers", {"a": 3, "b": 4})
        await client.call_tool_mcp("divide_numbers", {"a": 1, "b": 0})
        await client.call_tool_mcp("add_numbers", {"a": 99})
        await client.call_tool_mcp("explode_now", {})
    finished = spans.get_finished_spans()
    calls = [s for s in finished if s.kind == SpanKind.SERVER and _attributes(s).get("mcp.method.name") == "tools/call"]
    by_tool = {(_attributes(s)["gen_ai.tool.name"], _attributes(s)["mcp.outcome"]): s for s in calls}
    ok = by_tool[("add_numbers", "ok")]
    assert _attributes(ok)["mcp.toolset"] == "arithmetic"
    assert int(str(_attributes(ok)["mcp.result.bytes"])) > 0
    assert _attributes(by_tool[("divide_numbers", "tool_error")])["mcp.failure.category"] == "invalid_argument"
    assert _attributes(by_tool[("add_numbers", "tool_error")])["mcp.failure.category"] == "invalid_argument"
    assert _attributes(by_tool[("explode_now", "tool_error")])["mcp.failure.category"] == "internal"
    by_id = {s.context.span_id: s for s in finished}
    for call in calls:  # the server's span continues the trace of the client request that sent it
        assert call.parent is not None
        sender = by_id[call.parent.span_id]
        assert (sender.kind, sender.name) == (SpanKind.CLIENT, f"MCP send {call.name}")
        assert sender.context.trace_id == call.context.trace_id
    text = json.dumps([_attributes(s) for s in finished], default=str)
    assert SECRET not in text


async def test_no_argument_value_becomes_an_attribute(spans: InMemorySpanExporter) -> None:
    spans.clear()
    server = build()
    server.toolsets.enable("writing")
    async with Client(server, mode="legacy") as client:
        await client.call_tool("write_thing", {"text": f"{ARGUMENT} {SECRET}"})
    text = json.dumps([_attributes(s) for s in spans.get_finished_spans()], default=str)
    assert "write_thing" in text
    assert ARGUMENT not in text
    assert SECRET not in text


def test_otel_environment_wires_an_exporter_on_stderr_only(tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "mcp_server_template", "--notes-dir", str(tmp_path)]
    env = {"OTEL_TRACES_EXPORTER": "console", "OTEL_SERVICE_NAME": "notes-under-test"}
    with StdioWire(argv, env=env) as wire:
        wire.initialize()
        wire.request("tools/call", {"name": "write_note", "arguments": {"name": "n", "text": ARGUMENT}})
        # A failure whose message quotes an argument: fastmcp and the SDK record its exception on the spans.
        failed = wire.request("tools/call", {"name": "read_note", "arguments": {"name": ARGUMENT}})["result"]
        assert failed["isError"]
        assert ARGUMENT in failed["content"][0]["text"]
        assert wire.close() == 0
        for line in wire.raw_lines:  # stdout stays the protocol's
            assert json.loads(line)["jsonrpc"] == "2.0"
        stderr = wire.stderr
    assert '"mcp.outcome": "ok"' in stderr
    assert '"mcp.toolset": "notes"' in stderr
    assert '"service.name": "notes-under-test"' in stderr
    assert ARGUMENT not in stderr
    assert '"exception.type"' in stderr  # what failed stays in the trace; its message and traceback do not
    assert "Traceback" not in stderr


def test_otlp_exporter_sends_the_spans_a_collector_decodes(tmp_path: Path) -> None:
    """OTLP/HTTP to a collector (a local receiver decoding each body with the protobuf classes a collector uses):
    the spans the helpers encode arrive whole, the family's attributes on them, no exception message."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from threading import Thread

    from mcp_server_core.testing import free_port
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    received: list[tuple[str, str, bytes]] = []

    class Collector(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            received.append((self.path, self.headers.get("content-type", ""), body))
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    collector = ThreadingHTTPServer(("127.0.0.1", free_port()), Collector)
    Thread(target=collector.serve_forever, daemon=True).start()
    argv = [sys.executable, "-m", "mcp_server_template", "--notes-dir", str(tmp_path)]
    env = {
        "OTEL_TRACES_EXPORTER": "otlp",
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{collector.server_address[1]}",
        "OTEL_SERVICE_NAME": "notes-under-test",
    }
    try:
        with StdioWire(argv, env=env) as wire:
            wire.initialize()
            wire.request("tools/call", {"name": "write_note", "arguments": {"name": "n", "text": ARGUMENT}})
            assert wire.request("tools/call", {"name": "read_note", "arguments": {"name": ARGUMENT}})["result"][
                "isError"
            ]
            assert wire.close() == 0  # the spans leave at shutdown at the latest
    finally:
        collector.shutdown()
        collector.server_close()
    assert received
    spans = []
    for path, content_type, body in received:
        assert (path, content_type) == ("/v1/traces", "application/x-protobuf")
        assert ARGUMENT.encode() not in body
        for resource_spans in ExportTraceServiceRequest.FromString(body).resource_spans:
            service = {a.key: a.value.string_value for a in resource_spans.resource.attributes}["service.name"]
            assert service == "notes-under-test"
            spans += [span for scope in resource_spans.scope_spans for span in scope.spans]
    calls = {}
    for span in spans:
        attributes = {a.key: a.value for a in span.attributes}
        if "mcp.outcome" in attributes:
            calls[attributes["gen_ai.tool.name"].string_value] = (attributes, span)
    assert calls["write_note"][0]["mcp.outcome"].string_value == "ok"
    assert calls["write_note"][0]["mcp.toolset"].string_value == "notes"
    assert calls["write_note"][0]["mcp.result.bytes"].int_value > 0
    failed_attributes, failed = calls["read_note"]
    assert failed_attributes["mcp.outcome"].string_value == "tool_error"
    assert (len(failed.trace_id), len(failed.span_id)) == (16, 8)
    assert failed.end_time_unix_nano > failed.start_time_unix_nano
