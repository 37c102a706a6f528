"""Reading one JSON-RPC message off the wire, with an answer for everything that is not one.

Shared by the stdio transport (one message per line) and the HTTP body guard (one message per POST), so a
client gets the same error for the same mistake on either transport:
- not JSON (or not UTF-8, or nested deeper than the parser allows): -32700, id null;
- JSON that is not a JSON-RPC 2.0 message, or a batch (MCP 2025-06-18 removed them): -32600, with the id
  when one can be read;
- an id that is neither a string nor an integer (`true`, `1.5`, `null` on a request): -32600, id null. The
  SDK would otherwise read such a request as a notification and never answer it.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pydantic_core
from mcp_types import (
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCMessage,
    JSONRPCNotification,
    RequestId,
    jsonrpc_message_adapter,
)

__all__ = ["MessageRefused", "error_message", "oversized_id", "read_message"]


class MessageRefused(ValueError):
    """The bytes are not a JSON-RPC message this server takes; `error` is the answer to send."""

    def __init__(self, error: JSONRPCError) -> None:
        super().__init__(error.error.message)
        self.error = error


def error_message(request_id: RequestId | None, code: int, message: str) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=message))


def read_message(data: bytes) -> JSONRPCMessage:
    """The message in `data`; raises `MessageRefused` with the error to answer when there is none."""
    try:
        message = jsonrpc_message_adapter.validate_json(data, by_name=False)
    except ValueError:
        raise MessageRefused(_diagnose(data)) from None
    # Parsed again, not searched for b'"id"': a key may be spelled with escapes ("\u0069d"), and the request
    # would then go unanswered. Notifications are few (initialized, cancelled), so this costs next to nothing.
    if isinstance(message, JSONRPCNotification) and _has_id(data):
        raise MessageRefused(
            error_message(None, INVALID_REQUEST, 'Invalid Request: "id" must be a string or an integer.')
        )
    return message


def _parse(data: bytes) -> Any:
    # pydantic-core, not json.loads: it refuses deep nesting with a ValueError where json.loads recurses
    # until RecursionError, which no handler here expects.
    return pydantic_core.from_json(data)


def _has_id(data: bytes) -> bool:
    parsed = _parse(data)
    return isinstance(parsed, dict) and "id" in parsed


def _diagnose(data: bytes) -> JSONRPCError:
    """The error answer for bytes that did not validate as a JSON-RPC message."""
    try:
        parsed = _parse(data)
    except ValueError as exc:  # includes invalid UTF-8
        if "recursion limit" in str(exc):
            return error_message(
                None, PARSE_ERROR, "Parse error: the JSON nests deeper than this server reads (about 200 levels)."
            )
        return error_message(None, PARSE_ERROR, "Parse error: not valid UTF-8 JSON; send one JSON-RPC message.")
    if isinstance(parsed, list):
        return error_message(
            None, INVALID_REQUEST, "Invalid Request: batches are not supported (MCP 2025-06-18 removed them)."
        )
    request_id = parsed.get("id") if isinstance(parsed, dict) else None
    if not isinstance(request_id, str | int) or isinstance(request_id, bool):
        request_id = None
    return error_message(
        request_id,
        INVALID_REQUEST,
        'Invalid Request: expected a JSON-RPC 2.0 object with "jsonrpc": "2.0", a string "method" and an '
        'optional string or integer "id".',
    )


OVERSIZED_EDGE_BYTES = 64 * 1024
"""How much of each end of a message too large to read the transport keeps to find its id."""

# A top-level "id" written last: its value, then the one brace that closes the message. A nested object's
# last "id" is followed by two or more braces, and one inside a string by an escaped quote.
_LAST_ID = re.compile(rb'"id"\s*:\s*(-?\d{1,19}|"(?:[^"\\]|\\.){0,512}")\s*\}\s*$')


def oversized_id(head: bytes, tail: bytes) -> RequestId | None:
    """The id of a message too large to be read whole, from its first and last bytes, when it can be found.

    Answering it, rather than id null, ends the caller's wait at once instead of at its own timeout. The head
    is parsed as far as it goes (clients write "id" before "params"); else an id written last is read from
    the tail.
    """
    try:
        partial = pydantic_core.from_json(head, allow_partial=True)
    except ValueError:
        partial = None
    candidate: Any = partial.get("id") if isinstance(partial, dict) else None
    if candidate is None and (match := _LAST_ID.search(tail)):
        try:
            candidate = json.loads(match.group(1))
        except ValueError:
            candidate = None
    if isinstance(candidate, str | int) and not isinstance(candidate, bool):
        return candidate
    return None
