"""Reading one JSON-RPC message off the wire, with an answer for everything that is not one.

Shared by the stdio transport (one message per line) and the HTTP body guard (one message per POST), so a
client gets the same error for the same mistake on either transport:
- not JSON (or not UTF-8, or nested deeper than the parser allows): -32700, id null;
- JSON that is not a JSON-RPC 2.0 message, or a batch (MCP 2025-06-18 removed them): -32600, with the id
  when one can be read;
- an id that is neither a string nor an integer (`true`, `1.5`, `null` on a request): -32600, id null. The
  SDK would otherwise read such a request as a notification and never answer it;
- a message that would cost too much to build, judged from its bytes before any object is made: -32600, id
  null. Parsing builds up to ~110 bytes of Python objects per JSON value, and the SDK parses a message again
  after this check, so 8 MiB of `["ab","ab",...]` cost +291 MiB and a second of CPU. A message may hold 50,000
  objects and arrays, and 10,000 values plus one per 128 bytes of its size, which keeps a request's memory
  under four times its bytes.
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

__all__ = ["MAX_JSON_CONTAINERS", "MessageRefused", "error_message", "oversized_id", "read_message", "value_bound"]

MAX_JSON_CONTAINERS = 50_000
"""Objects and arrays one message may hold: a real one has dozens; 4 MiB of `[{},{},...]` built a million."""
FREE_JSON_VALUES = 10_000
"""Values any message may hold, whatever its size: a real request has dozens, a large tool argument thousands."""
BYTES_PER_JSON_VALUE = 128
"""Beyond those, one value per this many bytes of the message: what its parse builds then stays near its size."""


def value_bound(size: int) -> int:
    """The most JSON values (array elements and object members) a message of `size` bytes may hold."""
    return FREE_JSON_VALUES + size // BYTES_PER_JSON_VALUE


class MessageRefused(ValueError):
    """The bytes are not a JSON-RPC message this server takes; `error` is the answer to send."""

    def __init__(self, error: JSONRPCError) -> None:
        super().__init__(error.error.message)
        self.error = error


def error_message(request_id: RequestId | None, code: int, message: str) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=message))


def read_message(data: bytes) -> JSONRPCMessage:
    """The message in `data`; raises `MessageRefused` with the error to answer when there is none."""
    _refuse_costly(data)
    # Parsed, then validated, as the SDK reads a POST: validate_json held its objects twice at its peak (29 MB
    # for an 8 MiB body where this holds 14), and the parsed value also tells what was wrong with a message.
    try:
        parsed = _parse(data)
    except ValueError as exc:  # includes invalid UTF-8
        raise MessageRefused(_parse_error(exc)) from None
    try:
        message = jsonrpc_message_adapter.validate_python(parsed, by_name=False)
    except ValueError:
        raise MessageRefused(_invalid(parsed)) from None
    # An "id" the parser read, not b'"id"' searched for: a key may be spelled with escapes ("\u0069d"), and the
    # request would then go unanswered.
    if isinstance(message, JSONRPCNotification) and isinstance(parsed, dict) and "id" in parsed:
        raise MessageRefused(
            error_message(None, INVALID_REQUEST, 'Invalid Request: "id" must be a string or an integer.')
        )
    return message


def _parse(data: bytes) -> Any:
    # pydantic-core, not json.loads: it refuses deep nesting with a ValueError where json.loads recurses
    # until RecursionError, which no handler here expects.
    return pydantic_core.from_json(data)


def _parse_error(exc: ValueError) -> JSONRPCError:
    if "recursion limit" in str(exc):
        return error_message(
            None, PARSE_ERROR, "Parse error: the JSON nests deeper than this server reads (about 200 levels)."
        )
    return error_message(None, PARSE_ERROR, "Parse error: not valid UTF-8 JSON; send one JSON-RPC message.")


def _invalid(parsed: Any) -> JSONRPCError:
    """The error answer for JSON that is not a JSON-RPC message."""
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


_STRING = re.compile(rb'"[^"]*"')


def _refuse_costly(data: bytes) -> None:
    """Refuse, before building it, a message too costly to parse (see the module docstring). A batch is not
    refused here by its first byte: `[` followed by broken JSON is a parse error (-32700), and the parser tells
    the two apart once this has bounded what parsing costs."""
    bound = value_bound(len(data))
    containers, values = _structure(data, bound)
    if containers > MAX_JSON_CONTAINERS:
        message = f"Invalid Request: over {MAX_JSON_CONTAINERS:,} JSON objects and arrays in one message."
    elif values > bound:
        message = (
            f"Invalid Request: over {bound:,} JSON values in a message of {len(data):,} bytes (a message may hold "
            f"{FREE_JSON_VALUES:,} plus one per {BYTES_PER_JSON_VALUE} bytes); send large data as fewer, longer "
            "values, such as one string."
        )
    else:
        return
    raise MessageRefused(error_message(None, INVALID_REQUEST, message))


def _structure(data: bytes, bound: int) -> tuple[int, int]:
    """The objects and arrays in `data`, and its values (array elements and object members) or, if there are
    more than `bound`, some number over it; counted as brackets and commas, none inside a string (a JSON document
    sent as a string argument holds thousands), without building anything."""
    containers = data.count(b"{") + data.count(b"[")
    values = data.count(b",") + containers  # a container holds one more value than its commas, if any
    if containers <= MAX_JSON_CONTAINERS and values <= bound:
        return containers, values  # every bracket and comma counted, strings' too: the exact counts are lower
    # Escaped backslashes and quotes go first (paired left to right, as a JSON reader pairs them), so no quote
    # inside a string is left to end it; then a string is a quote, anything but a quote, a quote, which never
    # backtracks. Setting strings aside costs time per string, and each string is a value or a member's key: more
    # than twice the bound are too many values already.
    # (Skipped without a backslash: each replace costs a copy of the message, most of what this check costs.)
    unescaped = data.replace(b"\\\\", b"").replace(b'\\"', b"") if b"\\" in data else data
    if unescaped.count(b'"') // 2 > 2 * bound + 1:
        return 0, bound + 1
    structure = _STRING.sub(b"", unescaped)
    containers = structure.count(b"{") + structure.count(b"[")
    return containers, structure.count(b",") + containers
