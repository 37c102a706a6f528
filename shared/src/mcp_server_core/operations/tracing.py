"""OpenTelemetry traces for operators: fastmcp and the MCP SDK already make the spans; this sends them somewhere.

Nothing happens unless the operator asks with OpenTelemetry's own environment variables: `OTEL_TRACES_EXPORTER`
(`otlp`, `console`, `none`) or an `OTEL_EXPORTER_OTLP_*ENDPOINT`; `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`
and the exporter's own variables work as the SDK documents them. The SDK and the OTLP exporter are the helpers'
`otel` extra (`uvx --from 'mcp-server-db' --with 'mcp-server-core[otel]' mcp-server-db`); without them a warning
says so and the server runs untraced. The console exporter writes to stderr: stdout belongs to the protocol.

The family adds to fastmcp's span of each tools/call what only it knows: the toolset (`mcp.toolset`), the outcome
class (`mcp.outcome`, as in the audit trail), the failure's category and the bytes of the result. Argument values
never become attributes, and spans leave without exception messages, stack traces or error descriptions:
fastmcp and the MCP SDK record a failed request's exception on its span, and a failure's message may quote the
arguments ("note 'x' not found"). The exception's type and the error status stay; the server log has the rest.

What a span costs on the request path is the SDK's (fastmcp's request span, a statement's child span); the
family's part is kept out of it: spans leave through the SDK's batch processor, on its own thread, and only spans
that carry exception text are copied there. That thread still holds the interpreter lock while it encodes, so the
OTLP exporter's spans are encoded by operations/otlp.py (the same message, written straight to bytes) rather than
by the exporter's protobuf objects. bench/results-http.md measures the whole with the audit log.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, cast

from opentelemetry import context as otel_context
from opentelemetry import trace

if TYPE_CHECKING:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider

__all__ = ["annotate_call", "configure_tracing", "start_upstream_span", "upstream_span"]

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
    provider: TracerProvider = _answering_from_a_dict(TracerProvider)(resource=_hashed_once(Resource, resource))
    # Duck-typed as an exporter: a subclass would need the SDK, which stays optional until here.
    provider.add_span_processor(BatchSpanProcessor(cast("SpanExporter", _WithoutMessages(exporter))))
    trace.set_tracer_provider(provider)
    global _tracer
    # Not through the proxy taken at import, at every statement; from whichever provider the process kept (the SDK
    # refuses a second one, and the spans must go where fastmcp's go).
    _tracer = trace.get_tracer_provider().get_tracer("mcp_server_core")
    logger.info("tracing: spans go to the %s exporter", kind)
    return provider.shutdown


def _answering_from_a_dict(provider_class: type[TracerProvider]) -> type[TracerProvider]:
    """The SDK's TracerProvider, answering `get_tracer` from a dict.

    fastmcp asks for its tracer at every request span; the SDK then builds two scope objects (one through a
    deprecation wrapper) and resets the warnings filters, before returning the tracer it made the first time.
    Scopes with attributes are left to the SDK (a mapping is no dict key)."""

    class _TracerProvider(provider_class):  # type: ignore[valid-type,misc]
        _MAX_TRACERS = 64  # instrumentation names: a handful (fastmcp, the helpers, a library or two)

        def get_tracer(
            self,
            instrumenting_module_name: str,
            instrumenting_library_version: str | None = None,
            schema_url: str | None = None,
            attributes: Any = None,
        ) -> trace.Tracer:
            key = (instrumenting_module_name, instrumenting_library_version, schema_url)
            known: dict[tuple[str, str | None, str | None], trace.Tracer] = self.__dict__.setdefault("_known", {})
            tracer = known.get(key) if attributes is None else None
            if tracer is None:
                tracer = super().get_tracer(
                    instrumenting_module_name, instrumenting_library_version, schema_url, attributes
                )
                if attributes is None and len(known) < self._MAX_TRACERS:
                    known[key] = tracer
            return tracer

    return _TracerProvider


def _hashed_once(resource_class: type[Resource], resource: Resource) -> Resource:
    """The same resource, hashed once: the OTLP encoder groups spans by resource, hashing it for every span, and the
    SDK hashes a resource by dumping its attributes to JSON each time."""

    class _Resource(resource_class):  # type: ignore[valid-type,misc]
        def __init__(self, attributes: Any, schema_url: str | None = None) -> None:
            super().__init__(attributes, schema_url)
            self._hash = int(super().__hash__())

        def __hash__(self) -> int:
            return self._hash

    return _Resource(resource.attributes, resource.schema_url)


def _without_messages(span: Any) -> Any:
    """A copy of an ended span whose exception events keep their type only, and whose status no description; the
    span itself when it has neither (most spans: the copy is made only where there is text to leave out)."""
    from opentelemetry.sdk.trace import Event, ReadableSpan
    from opentelemetry.trace import Status

    if span.status.description is None and not any(e.name == "exception" for e in span.events):
        return span

    events = [
        Event(e.name, {k: v for k, v in (e.attributes or {}).items() if k == "exception.type"}, e.timestamp)
        if e.name == "exception"
        else e
        for e in span.events
    ]
    return ReadableSpan(
        name=span.name,
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes=span.attributes,
        events=events,
        links=span.links,
        kind=span.kind,
        status=Status(span.status.status_code),
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


class _WithoutMessages:
    """The operator's exporter, handed spans without the exception text fastmcp and the SDK record on them.

    The OTLP exporter's spans are encoded here (operations/otlp.py, the same message in a fraction of the time)
    and handed to its HTTP client, which keeps the exporter's endpoint, headers, compression, timeout and retries.
    An exporter without that client (the console's, an SDK that moved it) is handed the spans as they are."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        client = getattr(inner, "_client", None)
        # The SDK's own metrics of its exports, when asked for, are counted in the exporter's `export`.
        counted = os.environ.get("OTEL_PYTHON_SDK_INTERNAL_METRICS_ENABLED", "").strip().lower() == "true"
        self._send: Callable[[bytes], Any] | None = None if counted else getattr(client, "export", None)
        self._max_bytes = getattr(inner, "_max_request_size", 0)

    def export(self, spans: Any) -> Any:
        from opentelemetry.sdk.trace.export import SpanExportResult

        kept = [_without_messages(span) for span in spans]
        if self._send is None or getattr(self.inner, "_shutdown", False):
            return self.inner.export(kept)
        from mcp_server_core.operations.otlp import encode_spans

        try:
            data = encode_spans(kept)
        except Exception:  # what the exporter does with a batch it cannot encode: drop it, say so
            logger.exception("could not encode %d spans; dropped", len(kept))
            return SpanExportResult.FAILURE
        if self._max_bytes > 0 and len(data) > self._max_bytes:
            logger.warning(
                "a batch of spans encodes to %d bytes, over the exporter's %d: dropped", len(data), self._max_bytes
            )
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS if self._send(data).success else SpanExportResult.FAILURE

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return bool(self.inner.force_flush(timeout_millis))


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


_tracer: trace.Tracer = trace.get_tracer("mcp_server_core")


def _name_and_attributes(system: str, operation: str, attributes: dict[str, str | int | bool]) -> dict[str, Any]:
    return {
        "name": f"{system} {operation}",
        "kind": trace.SpanKind.CLIENT,
        "attributes": {"mcp.upstream": system, "mcp.upstream.operation": operation, **attributes},
        "record_exception": False,
        "set_status_on_exception": False,
    }


def _mark_failed(span: Any, exc: BaseException) -> None:
    if span.is_recording():
        span.set_status(trace.Status(trace.StatusCode.ERROR, type(exc).__name__))
        span.set_attribute("error.type", type(exc).__name__)


def upstream_span(system: str, operation: str, **attributes: str | int | bool) -> AbstractContextManager[None]:
    """A child span of the current call for one request to the upstream (a statement, an API request).

    `system` names the upstream (`postgresql`, `github`, `slack`), `operation` what was asked of it (a statement
    kind, `GET /repos/{owner}/{repo}/issues`, `conversations.history`): templates and names, never values, so
    no argument or secret becomes an attribute. An exception marks the span as failed with its type only.
    Without a configured tracer provider the span is a no-op and costs a function call.
    """
    return _UpstreamSpan(system, operation, attributes)


class _UpstreamSpan(AbstractContextManager[None]):
    """`upstream_span`'s span, current while inside. A class, not a generator around the SDK's
    `start_as_current_span` (itself a generator around `use_span`): a database call makes several of these, and
    each layer cost as much as a tenth of the span."""

    __slots__ = ("_arguments", "_span", "_token")

    def __init__(self, system: str, operation: str, attributes: dict[str, str | int | bool]) -> None:
        self._arguments = (system, operation, attributes)

    def __enter__(self) -> None:
        span = self._span = _tracer.start_span(**_name_and_attributes(*self._arguments))
        # A span with no valid context (no tracer provider) is not made current: the caller's stays visible.
        valid = span.get_span_context().is_valid
        self._token = otel_context.attach(trace.set_span_in_context(span)) if valid else None

    def __exit__(self, kind: object, exc: BaseException | None, traceback: object) -> None:
        if self._token is not None:
            otel_context.detach(self._token)
        if exc is not None:
            _mark_failed(self._span, exc)
        self._span.end()


def start_upstream_span(
    system: str, operation: str, **attributes: str | int | bool
) -> Callable[[BaseException | None], None]:
    """`upstream_span` for work whose start and end are separate callbacks (SQLAlchemy's statement events); returns
    the function that ends it, given the exception that failed it, if any.

    The span is a child of the current call but never becomes current itself: entering a current span in one
    callback and leaving it in another detached the context out of turn whenever the two ran in different
    contexts, or an end never came (OpenTelemetry logged "Failed to detach context", and every later span of that
    thread was parented under the one left open). A span that is never ended is only never exported.
    """
    span = _tracer.start_span(**_name_and_attributes(system, operation, attributes))

    def end(exc: BaseException | None = None) -> None:
        if exc is not None:
            _mark_failed(span, exc)
        span.end()

    return end
