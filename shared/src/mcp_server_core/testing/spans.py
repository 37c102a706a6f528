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
    one already set (installing it if none is), adds its own exporter, and on leaving removes only that: a
    module that shut the provider down, or set its own, would leave the next module's spans nowhere.
    """
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    exporter = InMemorySpanExporter()
    processor = SimpleSpanProcessor(exporter)
    provider.add_span_processor(processor)
    try:
        yield exporter
    finally:
        exporter.clear()
        processor.shutdown()  # a shut exporter drops what later modules' spans would send it
