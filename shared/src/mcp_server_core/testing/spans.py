"""Spans a test can read: OpenTelemetry's in-memory exporter on the process's one tracer provider."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

__all__ = ["recorded_spans"]


@contextmanager
def recorded_spans() -> Iterator[InMemorySpanExporter]:
    """Record every span ended while inside; needs the SDK (the helpers' `otel` extra).

    OpenTelemetry takes one tracer provider per process and refuses a second, so every test module joins the
    one already set (installing it if none is) and adds its own processor, which stops recording on leaving.
    The SDK cannot remove a processor, and a shut one warns at every later span (from a server's worker thread
    still finishing, after pytest closed the stream the warning goes to): so it is left quiet, not shut.
    """
    from opentelemetry import trace
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    class WhileInside(SimpleSpanProcessor):
        recording = True

        def on_end(self, span: ReadableSpan) -> None:
            if self.recording:
                super().on_end(span)

    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    exporter = InMemorySpanExporter()
    processor = WhileInside(exporter)
    provider.add_span_processor(processor)
    try:
        yield exporter
    finally:
        processor.recording = False
        exporter.clear()
