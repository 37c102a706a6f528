"""OpenTelemetry traces for operators: fastmcp and the MCP SDK already make the spans; this sends them somewhere.

Nothing happens unless the operator asks with OpenTelemetry's own environment variables: `OTEL_TRACES_EXPORTER`
(`otlp`, `console`, `none`) or an `OTEL_EXPORTER_OTLP_*ENDPOINT`; `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`
and the exporter's own variables work as the SDK documents them. The SDK and the OTLP exporter are the helpers'
`otel` extra (`uvx --from 'mcp-server-db' --with 'mcp-server-core[otel]' mcp-server-db`); without them a warning
says so and the server runs untraced. The console exporter writes to stderr: stdout belongs to the protocol.

The family adds to fastmcp's span of each tools/call what only it knows: the toolset (`mcp.toolset`), the outcome
class (`mcp.outcome`, as in the audit trail), the failure's category and the bytes of the result. Argument values
never become attributes.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace

__all__ = ["annotate_call", "configure_tracing", "upstream_span"]

logger = logging.getLogger(__name__)


def _asked_for() -> bool:
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporter = os.environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter:
        return exporter != "none"
    return any(key.startswith("OTEL_EXPORTER_OTLP_") and key.endswith("ENDPOINT") for key in os.environ)


def configure_tracing(service_name: str, version: str) -> Callable[[], None] | None:
    """Install a tracer provider if the environment asks for one; returns what flushes it at shutdown."""
    if not _asked_for():
        return None
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
    except ImportError:
        logger.warning(
            "OTEL_* asks for traces but the OpenTelemetry SDK is not installed: add the helpers' extra, "
            "e.g. uvx --with 'mcp-server-core[otel]' ...; serving without traces"
        )
        return None
    kind = os.environ.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower()
    exporter: SpanExporter
    if kind == "console":
        exporter = ConsoleSpanExporter(out=sys.stderr)
    elif kind == "otlp":
        protocol = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL"))
        if protocol not in (None, "http/protobuf"):
            logger.warning("OTEL_EXPORTER_OTLP_PROTOCOL=%s is not installed; using http/protobuf", protocol)
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter()
    else:
        logger.warning("OTEL_TRACES_EXPORTER=%s is not one of otlp, console, none; serving without traces", kind)
        return None
    # Resource.create reads OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES over these defaults.
    resource = Resource.create({"service.name": service_name, "service.version": version})
    if "OTEL_SERVICE_NAME" in os.environ:
        resource = resource.merge(Resource.create({"service.name": os.environ["OTEL_SERVICE_NAME"]}))
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    logger.info("tracing: spans go to the %s exporter", kind)
    return provider.shutdown


def annotate_call(toolset: str | None, outcome: str, *, category: str | None = None, size: int | None = None) -> None:
    """The family's attributes on the current span (fastmcp's span of this tools/call)."""
    span = trace.get_current_span()
    if not span.is_recording():
        return
    attributes: dict[str, Any] = {"mcp.outcome": outcome}
    if toolset:
        attributes["mcp.toolset"] = toolset
    if category:
        attributes["mcp.failure.category"] = category
    if size is not None:
        attributes["mcp.result.bytes"] = size
    span.set_attributes(attributes)


_tracer = trace.get_tracer("mcp_server_core")


@contextmanager
def upstream_span(system: str, operation: str, **attributes: str | int | bool) -> Iterator[None]:
    """A child span of the current call for one request to the upstream (a statement, an API request).

    `system` names the upstream (`postgresql`, `github`, `slack`), `operation` what was asked of it (a statement
    kind, `GET /repos/{owner}/{repo}/issues`, `conversations.history`): templates and names, never values, so
    no argument or secret becomes an attribute. An exception marks the span as failed with its type only.
    Without a configured tracer provider the span is a no-op and costs a function call.
    """
    with _tracer.start_as_current_span(
        f"{system} {operation}",
        kind=trace.SpanKind.CLIENT,
        attributes={"mcp.upstream": system, "mcp.upstream.operation": operation, **attributes},
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        try:
            yield
        except BaseException as exc:
            if span.is_recording():
                span.set_status(trace.Status(trace.StatusCode.ERROR, type(exc).__name__))
                span.set_attribute("error.type", type(exc).__name__)
            raise
