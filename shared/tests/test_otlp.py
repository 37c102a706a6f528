"""The helpers' OTLP encoding writes the message the OpenTelemetry exporter would: decoded with the protobuf classes
the exporter uses, it equals the exporter's own, for spans with every kind of field (events, links, remote parents,
trace state, error status, scopes and resources of their own, attributes of every type and some it refuses)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from mcp_server_core.operations.otlp import encode_spans
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans as exporter_encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags, TraceState


def _provider(exporter: InMemorySpanExporter, service: str) -> TracerProvider:
    provider = TracerProvider(resource=Resource.create({"service.name": service, "deployment": "test", "n": 3}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider


@pytest.fixture
def spans() -> Iterator[list[ReadableSpan]]:
    exporter = InMemorySpanExporter()
    first, second = _provider(exporter, "one"), _provider(exporter, "two")
    plain = first.get_tracer("plain")
    versioned = first.get_tracer("versioned", "1.2.3", schema_url="https://example.test/schema", attributes={"a": 1})
    remote = SpanContext(
        0x1234, 0x5678, is_remote=True, trace_flags=TraceFlags(1), trace_state=TraceState([("k", "v")])
    )
    with plain.start_as_current_span("tools/call run_query", kind=SpanKind.SERVER) as call:
        call.set_attributes(
            {
                "text": "ünïcode ✓",
                "empty": "",
                "yes": True,
                "no": False,
                "count": 0,
                "negative": -42,
                "large": 2**62,
                "ratio": 0.25,
                "negative_zero": -0.0,
                "names": ["a", "b"],
                "numbers": [1, -2, 3],
                "flags": [True, False],
                "ratios": [0.5, 1.5],
                "nothing": [],
            }
        )
        call.add_event("checkpoint", {"step": 1, "label": "x"})
        with versioned.start_as_current_span("sqlite SELECT", kind=SpanKind.CLIENT, links=[Link(remote, {"why": "x"})]):
            pass
        try:
            raise ValueError("a message")
        except ValueError as exc:
            call.record_exception(exc)
            call.set_status(Status(StatusCode.ERROR, "it failed"))
    context = trace.set_span_in_context(trace.NonRecordingSpan(remote))
    with second.get_tracer("other").start_as_current_span("", context=context, kind=SpanKind.CONSUMER) as child:
        child.set_status(Status(StatusCode.OK))
    for kind in (SpanKind.INTERNAL, SpanKind.PRODUCER):
        first.get_tracer("plain").start_span(f"kind {kind.name}", kind=kind).end()
    yield list(exporter.get_finished_spans())
    first.shutdown()
    second.shutdown()


def test_the_request_equals_the_exporters(spans: list[ReadableSpan]) -> None:
    ours = ExportTraceServiceRequest.FromString(encode_spans(spans))
    assert ours == exporter_encode_spans(spans)
    assert len(ours.resource_spans) == 2
    # Encoded twice, the second time from the store of recurring attributes: the same message.
    assert ExportTraceServiceRequest.FromString(encode_spans(spans)) == ours


def test_each_span_alone_equals_the_exporters(spans: list[ReadableSpan]) -> None:
    for span in spans:
        assert ExportTraceServiceRequest.FromString(encode_spans([span])) == exporter_encode_spans([span])


def test_no_spans_no_bytes() -> None:
    assert encode_spans([]) == exporter_encode_spans([]).SerializeToString() == b""
