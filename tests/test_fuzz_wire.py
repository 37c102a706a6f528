"""Fuzzed wire input against every server, over stdio and Streamable HTTP.

Hypothesis writes JSON-RPC messages with wrong types, missing fields, huge ids, deep nesting, invalid UTF-8
and batches. After each one the test sends a ping: the server must have answered the fuzzed message exactly
as the protocol asks (a request gets one response with its own id; anything that is no JSON-RPC message gets
-32700 or -32600; a notification or a client's response gets nothing), and it must still answer the ping.
One server process per server and transport serves every example, so a crash or a hang shows up at once.

The oracle below is written from the JSON-RPC 2.0 spec and MCP's "no batches" rule, independently of the
server's own reader (`mcp_server_core.transport.jsonrpc`), so a wrong answer there fails here.
"""

from __future__ import annotations

import itertools
import json
import select
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp_server_core.testing import HttpWire, StdioWire, spawn_http_server

from tests.conftest import SERVERS

PARSE_ERROR, INVALID_REQUEST = -32700, -32600
EXAMPLES = 120
NESTING_LIMIT = 200
"""pydantic-core refuses JSON nested deeper than this; the strategies stay well clear of the boundary."""

FUZZ_SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,  # the same examples on every run: a failure here is a bug, not bad luck
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# --- what to send --------------------------------------------------------------------------------------------

METHODS = [
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "initialize",
    "server/discover",
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/progress",
    "notifications/roots/list_changed",
]
"""Real method names, so fuzzed params reach the handlers. Not `subscriptions/listen`: by design it answers
only when cancelled."""

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=4)),
    max_leaves=20,
)
ids = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**63),
    st.integers(min_value=10**20, max_value=10**300),  # huge ids
    st.text(max_size=30),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
tool_arguments = st.one_of(
    st.dictionaries(
        st.sampled_from(["sql", "name", "text", "query", "limit", "cursor", "tables", "params"]), json_values
    ),
    json_values,
)
params = st.one_of(
    st.none(),
    json_values,
    st.fixed_dictionaries(
        {"name": st.one_of(st.text(max_size=30), json_values)}, optional={"arguments": tool_arguments}
    ),
    st.fixed_dictionaries({"uri": st.one_of(st.text(max_size=50), json_values)}),
    st.fixed_dictionaries(
        {"protocolVersion": st.one_of(st.sampled_from(["2025-11-25", "2024-11-05", "1999-01-01"]), json_values)},
        optional={"capabilities": json_values, "clientInfo": json_values},
    ),
    st.fixed_dictionaries({"level": st.one_of(st.sampled_from(["debug", "error", "nonsense"]), json_values)}),
    st.fixed_dictionaries({"requestId": st.one_of(ids, json_values)}),
)


@st.composite
def messages(draw: st.DrawFn) -> dict[str, Any]:
    """A JSON-RPC-shaped object with each field present, missing, or of a wrong type."""
    message: dict[str, Any] = {}
    jsonrpc = draw(st.one_of(st.just("2.0"), st.just("2.0"), st.sampled_from(["1.0", "2", 2.0, None, ""])))
    if draw(st.integers(0, 9)):
        message["jsonrpc"] = jsonrpc
    if draw(st.integers(0, 3)):
        message["id"] = draw(ids)
    if draw(st.integers(0, 5)):
        message["method"] = draw(st.one_of(st.sampled_from(METHODS), st.text(max_size=30), scalars))
        if draw(st.booleans()):
            message["params"] = draw(params)
    else:  # no method: what a client's response (or a mistake) looks like
        reply = draw(st.sampled_from(["result", "error", "neither"]))
        if reply == "result":
            message["result"] = draw(json_values)
        elif reply == "error":
            message["error"] = draw(
                st.one_of(json_values, st.fixed_dictionaries({"code": st.integers(), "message": st.text()}))
            )
    if draw(st.integers(0, 9)) == 0:
        message[draw(st.text(max_size=8))] = draw(json_values)  # an extra member
    return message


@st.composite
def deeply_nested(draw: st.DrawFn) -> bytes:
    depth = draw(st.integers(NESTING_LIMIT + 50, 5_000))
    opener, closer = draw(st.sampled_from([(b"[", b"]"), (b'{"a":', b"}")]))
    return b'{"jsonrpc":"2.0","id":7,"method":"ping","params":{"x":' + opener * depth + b"1" + closer * depth + b"}}"


def _encode(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


wire_inputs = st.one_of(
    messages().map(_encode),
    messages().map(_encode),
    st.lists(messages(), max_size=3).map(_encode),  # batches, the empty one included
    json_values.map(_encode),  # valid JSON that is no message at all
    deeply_nested(),
    messages().map(lambda m: _encode(m)[: max(1, len(_encode(m)) // 2)]),  # truncated
    messages().map(lambda m: _encode(m).replace(b'"2.0"', b'"2.0\xff\xfe"', 1)),  # invalid UTF-8 inside
    st.binary(max_size=200),
)

# --- what must come back -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Expect:
    kind: str
    """"answer": one response with `request_id`; "error": one error with a code in `codes` and id `request_id`;
    "nothing": no response; "nothing_or_error": a client's response, which a server may ignore or refuse."""
    request_id: object = None
    codes: tuple[int, ...] = ()


def _depth(value: object) -> int:
    deepest, stack = 0, [(value, 0)]
    while stack:  # iterative: the values measured here are deeper than Python's recursion limit
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is not None:
            deepest = max(deepest, depth + 1)
            stack.extend((child, depth + 1) for child in children)
    return deepest


def _valid_id(value: object) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def expected(raw: bytes) -> Expect:
    """What JSON-RPC 2.0 (and MCP, which has no batches) says the answer to `raw` is."""
    try:
        parsed = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return Expect("error", None, (PARSE_ERROR,))
    if _depth(parsed) > NESTING_LIMIT:
        return Expect("error", None, (PARSE_ERROR,))
    if not isinstance(parsed, dict):
        return Expect("error", None, (INVALID_REQUEST,))
    request_id = parsed.get("id") if _valid_id(parsed.get("id")) else None
    if "method" not in parsed:
        if "id" in parsed and ("result" in parsed or "error" in parsed):
            return Expect("nothing_or_error", None, (INVALID_REQUEST,))
        return Expect("error", request_id, (INVALID_REQUEST,))
    well_formed = (
        parsed.get("jsonrpc") == "2.0"
        and isinstance(parsed["method"], str)
        and (parsed.get("params") is None or isinstance(parsed["params"], dict))
    )
    if not well_formed:
        return Expect("error", request_id, (INVALID_REQUEST,))
    if "id" not in parsed:
        return Expect("nothing")
    if request_id is None:  # "id": true, 1.5, null, [..]: a request whose id the server cannot echo
        return Expect("error", None, (INVALID_REQUEST,))
    return Expect("answer", request_id)


def _is_response(message: dict[str, Any]) -> bool:
    return "method" not in message and "id" in message


def check(expect: Expect, responses: list[dict[str, Any]], raw: bytes) -> None:
    for response in responses:
        assert response.get("jsonrpc") == "2.0", response
        assert ("result" in response) != ("error" in response), response
        if "error" in response:
            assert isinstance(response["error"].get("code"), int), response
            assert isinstance(response["error"].get("message"), str), response
            assert "Traceback" not in response["error"]["message"], response
    if expect.kind == "nothing":
        assert responses == [], f"{raw!r} is a notification, yet the server answered {responses!r}"
        return
    if expect.kind == "nothing_or_error":
        assert len(responses) <= 1, responses
        if responses:
            assert responses[0]["error"]["code"] in expect.codes, responses
        return
    assert len(responses) == 1, f"{raw[:300]!r} got {len(responses)} answers: {responses!r}"
    (response,) = responses
    assert response["id"] == expect.request_id, (raw, response)
    assert type(response["id"]) is type(expect.request_id), (raw, response)
    if expect.kind == "error":
        assert "error" in response, f"{raw[:300]!r} should be refused, got {response!r}"
        assert response["error"]["code"] in expect.codes, (raw[:300], response)


def test_the_oracle_reads_the_spec() -> None:
    """The oracle itself, on cases whose answer the spec spells out."""
    assert expected(b'{"jsonrpc":"2.0","id":1,"method":"ping"}') == Expect("answer", 1)
    assert expected(b'{"jsonrpc":"2.0","method":"notifications/initialized"}') == Expect("nothing")
    assert expected(b'{"jsonrpc":"2.0","id":true,"method":"ping"}') == Expect("error", None, (INVALID_REQUEST,))
    assert expected(b'{"jsonrpc":"1.0","id":"a","method":"ping"}') == Expect("error", "a", (INVALID_REQUEST,))
    assert expected(b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]').codes == (INVALID_REQUEST,)
    assert expected(b'{"jsonrpc":"2.0","id":1,"method":') == Expect("error", None, (PARSE_ERROR,))
    assert expected(b'"\xff"') == Expect("error", None, (PARSE_ERROR,))
    assert expected(b"[" * 300 + b"]" * 300) == Expect("error", None, (PARSE_ERROR,))


# --- stdio ---------------------------------------------------------------------------------------------------

probe_ids = itertools.count()


@pytest.fixture(scope="module", params=sorted(SERVERS))
def stdio_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[StdioWire]:
    argv = SERVERS[request.param](tmp_path_factory.mktemp(f"fuzz-stdio-{request.param}"))
    with StdioWire(argv) as wire:
        assert "result" in wire.initialize()
        yield wire
        assert wire.proc.poll() is None, f"the server died; stderr:\n{wire.stderr[-3000:]}"


def _exchange_stdio(wire: StdioWire, raw: bytes) -> list[dict[str, Any]]:
    """Send `raw`, then a ping; the responses that came before the ping's answer."""
    probe = f"probe-{next(probe_ids)}"
    wire.send(raw)
    wire.send({"jsonrpc": "2.0", "id": probe, "method": "ping"})
    responses: list[dict[str, Any]] = []
    deadline = time.monotonic() + 20
    while True:
        message = wire.receive(timeout=max(deadline - time.monotonic(), 0.01))
        if not _is_response(message):
            continue  # a notification or a request of the server's own (roots/list after a fuzzed handshake)
        if message["id"] == probe:
            assert message.get("result") == {}, message
            return responses
        responses.append(message)


@FUZZ_SETTINGS
@given(raw=wire_inputs)
def test_stdio_answers_every_fuzzed_line_and_keeps_serving(stdio_server: StdioWire, raw: bytes) -> None:
    line = raw.replace(b"\n", b" ")  # one message per line: a newline inside would make it two
    expect = Expect("nothing") if not line.strip() else expected(line)  # blank lines are skipped
    check(expect, _exchange_stdio(stdio_server, line), line)


# --- Streamable HTTP -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module", params=sorted(SERVERS))
def http_session(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpWire]:
    argv = SERVERS[request.param](tmp_path_factory.mktemp(f"fuzz-http-{request.param}"))
    with spawn_http_server(argv) as (url, process), HttpWire(url) as wire:
        assert "result" in wire.initialize()
        yield wire
        assert process.poll() is None, "the HTTP server died"


@FUZZ_SETTINGS
@given(raw=wire_inputs)
def test_http_answers_every_fuzzed_body_and_keeps_serving(http_session: HttpWire, raw: bytes) -> None:
    expect = expected(raw)
    response = http_session.post(raw)
    answers = [m for m in http_session.messages(response) if _is_response(m)]
    if expect.kind == "nothing":
        assert response.status_code == 202, (raw, response.status_code, response.text[:300])
    elif expect.kind == "error":  # refused by the transport, before any handler
        assert response.status_code == 400, (raw, response.status_code, response.text[:300])
    elif expect.kind == "nothing_or_error":
        assert response.status_code in (202, 400), (raw, response.status_code, response.text[:300])
    elif expect.kind == "answer":
        assert response.status_code == 200, (raw, response.status_code, response.text[:300])
    check(expect, answers, raw)
    assert http_session.request("ping")["result"] == {}


# --- oversized bodies ----------------------------------------------------------------------------------------

SMALL_LIMIT = 64 * 1024


@pytest.fixture(scope="module")
def small_limit_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    argv = SERVERS["db"](tmp_path_factory.mktemp("fuzz-limit"))
    with spawn_http_server([*argv, "--max-body-bytes", str(SMALL_LIMIT)]) as (url, _process):
        yield url


def _ping_with_padding(size: int) -> bytes:
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"_meta": {"pad": ""}}}
    padding = size - len(_encode(body))
    body["params"]["_meta"]["pad"] = "x" * max(padding, 0)
    return _encode(body)


def test_a_body_over_the_limit_gets_413_with_a_json_rpc_error(small_limit_server: str) -> None:
    with HttpWire(small_limit_server) as wire:
        wire.initialize()
        refused = wire.post(_ping_with_padding(SMALL_LIMIT + 1))
        assert refused.status_code == 413
        error = refused.json()
        assert error["jsonrpc"] == "2.0"
        assert error["id"] is None
        assert error["error"]["code"] == INVALID_REQUEST
        assert f"{SMALL_LIMIT:,} bytes" in error["error"]["message"]
        within = wire.post(_ping_with_padding(SMALL_LIMIT))
        assert within.status_code == 200
        assert wire.messages(within)[0]["result"] == {}
        assert wire.request("ping")["result"] == {}


def _whole_response(answer: bytes) -> bool:
    """True once the head and as many body bytes as its Content-Length names have arrived: the body can come
    in a later segment than the head."""
    head, separator, body = answer.partition(b"\r\n\r\n")
    if not separator:
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value.strip())
    return True


def _stream_chunked(url: str, total: int) -> tuple[bytes, int]:
    """POST a chunked body of `total` bytes (no Content-Length) over a raw socket, stopping when the server
    answers; returns (the whole response, bytes of body sent by then)."""
    parts = urlsplit(url)
    assert parts.hostname is not None
    assert parts.port is not None
    sock = socket.create_connection((parts.hostname, parts.port), timeout=10)
    head = (
        f"POST {parts.path} HTTP/1.1\r\nHost: {parts.hostname}:{parts.port}\r\nContent-Type: application/json\r\n"
        "Accept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    ).encode()
    chunk = b"[" * 65536
    sent = 0
    answer = b""
    try:
        sock.sendall(head)
        sock.settimeout(0.5)
        while sent < total:
            readable, _, _ = select.select([sock], [], [], 0)
            if readable:
                break
            try:
                sock.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
            except TimeoutError:
                continue  # the server stopped reading: its answer should be waiting
            except (BrokenPipeError, ConnectionResetError):
                break
            sent += len(chunk)
        sock.settimeout(10)
        with_deadline = time.monotonic() + 10
        while not _whole_response(answer) and time.monotonic() < with_deadline:
            data = sock.recv(65536)
            if not data:
                break
            answer += data
    finally:
        sock.close()
    return answer, sent


def test_a_streamed_body_is_refused_before_it_is_read_whole(small_limit_server: str) -> None:
    total = 64 * 1024 * 1024
    answer, sent = _stream_chunked(small_limit_server, total)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b'"code":-32600' in answer
    # What the kernel's socket buffers hold is all that was sent past the limit: far from the 64 MiB offered.
    assert sent < 16 * 1024 * 1024, sent
    with HttpWire(small_limit_server) as wire:
        assert "result" in wire.initialize()


def test_the_default_limit_matches_stdio() -> None:
    from mcp_server_core.conventions.settings import ServerSettings
    from mcp_server_core.transport.stdio import MAX_LINE_BYTES

    assert ServerSettings().max_body_bytes == MAX_LINE_BYTES
