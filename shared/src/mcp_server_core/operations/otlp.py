"""Spans as an OTLP/HTTP request body (ExportTraceServiceRequest, protobuf), written straight to bytes.

The OTLP exporter builds a protobuf object for every span, attribute and value, then serializes them: with every
span kept that was the largest part of what tracing cost a call (bench/results-http.md), all of it holding the
interpreter lock on the exporter's thread while the event loop waited. This writes the same message (the same
fields, the same values, what proto3 leaves out left out) from the spans directly, and keeps the encoded bytes of
an attribute whose key and value recur (a call's method, tool, server name: most of a span's attributes) so each
is encoded once. shared/tests/test_otlp.py decodes what it writes with the protobuf classes the exporter uses and
compares it with the exporter's own message, span for span.

Wire format: opentelemetry-proto's trace.proto and common.proto (field numbers and types below, by message).
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["encode_spans"]

logger = logging.getLogger(__name__)

_FIXED64 = struct.Struct("<Q").pack
_FIXED32 = struct.Struct("<I").pack
_DOUBLE = struct.Struct("<d").pack
_SMALL = [bytes([n]) for n in range(0x80)]
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1

_SPAN_KIND = {"INTERNAL": 1, "SERVER": 2, "CLIENT": 3, "PRODUCER": 4, "CONSUMER": 5}
"""trace.proto's Span.SpanKind by the SDK's SpanKind names (the SDK numbers them from 0, the proto from 1)."""
_HAS_IS_REMOTE, _IS_REMOTE = 0x100, 0x200
"""trace.proto's SpanFlags: whether the parent's remoteness is known (always, here), and that it is remote."""

_CACHED_ATTRIBUTES = 4096
"""Encoded attributes kept (strings, booleans, integers: a float equal to another may differ in its bytes, as
0.0 and -0.0 do): the recurring ones of a server number in the tens; values that change per call (an
id) pass through and the store starts over when full, so it stays bounded whatever the attributes."""
_CACHED_VALUE_CHARS = 256
_attribute_fields: dict[tuple[bytes, str, type, Any], bytes] = {}


def _varint(n: int) -> bytes:
    if n < 0x80:
        return _SMALL[n]
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _field(tag: bytes, payload: bytes) -> bytes:
    """A length-delimited field (a string, bytes or a message)."""
    return tag + _varint(len(payload)) + payload


def _any_value(value: Any) -> bytes:
    """common.proto's AnyValue: 1 string, 2 bool, 3 int64, 4 double, 5 ArrayValue, 6 KeyValueList, 7 bytes; an
    empty one for None. A value the exporter would refuse (another type, an int beyond int64) raises, as there."""
    if value is None:
        return b""
    if isinstance(value, bool):
        return b"\x10\x01" if value else b"\x10\x00"
    if isinstance(value, str):
        return _field(b"\x0a", value.encode())
    if isinstance(value, int):
        if not _INT64_MIN <= value <= _INT64_MAX:
            raise ValueError("an integer beyond int64")
        return b"\x18" + _varint(value & 0xFFFF_FFFF_FFFF_FFFF)
    if isinstance(value, float):
        return b"\x21" + _DOUBLE(value)
    if isinstance(value, bytes):
        return _field(b"\x3a", value)
    if isinstance(value, Sequence):  # ArrayValue: 1 repeated AnyValue
        return _field(b"\x2a", b"".join(_field(b"\x0a", _any_value(item)) for item in value))
    if isinstance(value, Mapping):  # KeyValueList: 1 repeated KeyValue
        return _field(b"\x32", b"".join(_field(b"\x0a", _key_value(str(k), v)) for k, v in value.items()))
    raise TypeError(f"an attribute value of type {type(value).__name__}")


def _key_value(key: str, value: Any) -> bytes:
    """common.proto's KeyValue: 1 key, 2 value (always present, as the exporter sets it)."""
    return (_field(b"\x0a", key.encode()) if key else b"") + _field(b"\x12", _any_value(value))


def _attributes(tag: bytes, attributes: Mapping[str, Any] | None) -> list[bytes]:
    """Each attribute as a repeated KeyValue field `tag`; one that cannot be encoded is left out and logged (by key
    and type only: a value may hold what no log should), as the exporter leaves it out."""
    if not attributes:
        return []
    fields = []
    cache = _attribute_fields
    for key, value in attributes.items():
        kind = type(value)
        cacheable = kind in (str, bool, int) and (kind is not str or len(value) <= _CACHED_VALUE_CHARS)
        if cacheable:
            cached = cache.get((tag, key, kind, value))
            if cached is not None:
                fields.append(cached)
                continue
        try:
            encoded = _field(tag, _key_value(key, value))
        except (TypeError, ValueError, UnicodeEncodeError) as exc:
            logger.warning("span attribute %r not exported: %s", key, exc)
            continue
        if cacheable:
            if len(cache) >= _CACHED_ATTRIBUTES:
                cache.clear()
            cache[(tag, key, kind, value)] = encoded
        fields.append(encoded)
    return fields


def _flags(parent: Any) -> bytes:
    return _FIXED32(_HAS_IS_REMOTE | (_IS_REMOTE if parent is not None and parent.is_remote else 0))


def _trace_state(tag: bytes, trace_state: Any) -> list[bytes]:
    if not trace_state:
        return []
    return [_field(tag, ",".join(f"{key}={value}" for key, value in trace_state.items()).encode())]


def _span(span: Any) -> bytes:
    """trace.proto's Span: 1 trace_id, 2 span_id, 3 trace_state, 4 parent_span_id, 5 name, 6 kind, 7 start and
    8 end (fixed64 ns), 9 attributes, 10 dropped attributes, 11 events, 12 dropped events, 13 links, 14 dropped
    links, 15 status, 16 flags (fixed32)."""
    context = span.context
    parent = span.parent
    parts = [b"\x0a\x10", context.trace_id.to_bytes(16, "big"), b"\x12\x08", context.span_id.to_bytes(8, "big")]
    parts += _trace_state(b"\x1a", context.trace_state)
    if parent is not None:
        parts += (b"\x22\x08", parent.span_id.to_bytes(8, "big"))
    if span.name:
        parts.append(_field(b"\x2a", span.name.encode()))
    parts += (b"\x30", _SMALL[_SPAN_KIND[span.kind.name]])
    if span.start_time:
        parts += (b"\x39", _FIXED64(span.start_time))
    if span.end_time:
        parts += (b"\x41", _FIXED64(span.end_time))
    parts += _attributes(b"\x4a", span.attributes)
    if span.dropped_attributes:
        parts += (b"\x50", _varint(span.dropped_attributes))
    for event in span.events:  # Event: 1 time (fixed64), 2 name, 3 attributes, 4 dropped attributes
        body = [b"\x09", _FIXED64(event.timestamp)] if event.timestamp else []
        if event.name:
            body.append(_field(b"\x12", event.name.encode()))
        body += _attributes(b"\x1a", event.attributes)
        if event.dropped_attributes:
            body += (b"\x20", _varint(event.dropped_attributes))
        parts.append(_field(b"\x5a", b"".join(body)))
    if span.dropped_events:
        parts += (b"\x60", _varint(span.dropped_events))
    for link in span.links:  # Link: 1 trace_id, 2 span_id, 4 attributes, 5 dropped, 6 flags (3,
        # its trace state, the exporter leaves out)
        body = [b"\x0a\x10", link.context.trace_id.to_bytes(16, "big"), b"\x12\x08"]
        body.append(link.context.span_id.to_bytes(8, "big"))
        body += _attributes(b"\x22", link.attributes)
        if link.dropped_attributes:
            body += (b"\x28", _varint(link.dropped_attributes))
        body += (b"\x35", _flags(link.context))
        parts.append(_field(b"\x6a", b"".join(body)))
    if span.dropped_links:
        parts += (b"\x70", _varint(span.dropped_links))
    status = span.status  # Status: 2 message, 3 code
    if status is not None:
        body = [_field(b"\x12", status.description.encode())] if status.description else []
        if status.status_code.value:
            body += (b"\x18", _varint(status.status_code.value))
        parts.append(_field(b"\x7a", b"".join(body)))
    parts += (b"\x85\x01", _flags(parent))
    return b"".join(parts)


def _resource(resource: Any) -> bytes:
    """resource.proto's Resource: 1 attributes."""
    return b"".join(_attributes(b"\x0a", resource.attributes))


def _scope(scope: Any) -> bytes:
    """common.proto's InstrumentationScope: 1 name, 2 version, 3 attributes (empty without a scope)."""
    if scope is None:
        return b""
    parts = [_field(b"\x0a", scope.name.encode())] if scope.name else []
    if scope.version:
        parts.append(_field(b"\x12", scope.version.encode()))
    parts += _attributes(b"\x1a", scope.attributes)
    return b"".join(parts)


def encode_spans(spans: Sequence[Any]) -> bytes:
    """The ExportTraceServiceRequest of `spans` (1 repeated ResourceSpans: 1 resource, 2 ScopeSpans, 3 schema_url;
    ScopeSpans: 1 scope, 2 spans, 3 schema_url), grouped by resource then scope in the order first met, as the
    exporter groups them."""
    groups: dict[Any, dict[Any, list[bytes]]] = {}
    for span in spans:
        scopes = groups.setdefault(span.resource, {})
        scopes.setdefault(span.instrumentation_scope or None, []).append(_field(b"\x12", _span(span)))
    request = []
    for resource, scopes in groups.items():
        body = [_field(b"\x0a", _resource(resource))]
        for scope, encoded in scopes.items():
            scope_spans = [_field(b"\x0a", _scope(scope)), *encoded]
            if scope is not None and scope.schema_url:
                scope_spans.append(_field(b"\x1a", scope.schema_url.encode()))
            body.append(_field(b"\x12", b"".join(scope_spans)))
        if resource.schema_url:
            body.append(_field(b"\x1a", resource.schema_url.encode()))
        request.append(_field(b"\x0a", b"".join(body)))
    return b"".join(request)
