"""The Streamable HTTP front against hostile clients, over real sockets on loopback, bounded in count and time.

Each class of issue 14 has its case: slow and oversized headers, duplicate and oversized Authorization, bodies
that never end or that together would exhaust memory, bodies shaped to blow up the parser, the configured body
limit, sessions bound to their credential and capped per credential and in total, JWT lifetime, scope and key
revocation, and fairness: one client's slow or abandoned calls never make another client wait. Limits are set
low by flag so the attacks stay small.

And what a second round found: a Content-Type the guard and the SDK read differently, initializes racing past
the session cap, sockets and dribbled bodies that fill --max-connections without a request (anonymous) or with
slow bodies and listen streams (one credential), one credential holding the whole body budget, a JWT whose
future `iat` hides its lifetime, a static token that outlived its removal from the file, Content-Length beside
Transfer-Encoding (request smuggling), and brackets inside strings counted as structure.
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx2
import jwt
import pytest
from mcp_server_core.testing import HttpWire, free_port, spawn_http_server
from mcp_server_core.testing.wire import MODERN, with_envelope

from tests.conftest import SERVERS
from tests.test_http_auth import ISSUER, _jwk, _key

# Timing matters here (deadlines, another client's latency): run with the machine to ourselves.
pytestmark = pytest.mark.serial

TOKEN_A = "hostile-a-" + "a" * 40
TOKEN_B = "hostile-b-" + "b" * 40
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}},
}
"""What opens a session: the caps answer it before a session exists."""
SLOW_SQL = "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 30000000) SELECT count(*) FROM c"


def _addr(url: str) -> tuple[str, int]:
    host, port = url.split("//")[1].split("/")[0].split(":")
    return host, int(port)


def _raw(url: str, payload: bytes, *, read_timeout: float = 10.0) -> bytes:
    """Send raw bytes, read what comes back until the server closes (or the timeout)."""
    with socket.create_connection(_addr(url), timeout=read_timeout) as sock:
        sock.sendall(payload)
        chunks = []
        try:
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        except (TimeoutError, ConnectionResetError):
            pass
    return b"".join(chunks)


def _head(path: str = "/mcp", *extra: str, length: int | None = None) -> bytes:
    lines = [
        f"POST {path} HTTP/1.1",
        "Host: 127.0.0.1",
        "Content-Type: application/json",
        "Accept: application/json, text/event-stream",
        *extra,
    ]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _answer(sock: socket.socket) -> bytes | None:
    """What the server has sent on `sock` so far (b"" if it closed it unanswered), or None if nothing yet."""
    sock.settimeout(0.05)
    try:
        return sock.recv(65536)
    except TimeoutError:
        return None
    except ConnectionResetError:
        return b""


def _closed_within(sock: socket.socket, seconds: float) -> bytes | None:
    """What the server sent before closing `sock`, or None if it is still open after `seconds`."""
    sock.settimeout(seconds)
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except TimeoutError:
        return None
    except ConnectionResetError:
        pass
    return received


@pytest.fixture(scope="module")
def template_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The module server's folder: its notes are in `notes/`."""
    return tmp_path_factory.mktemp("hostile")


@pytest.fixture(scope="module")
def template(template_home: Path) -> Iterator[str]:
    tmp = template_home
    argv = [
        *SERVERS["template"](tmp),
        "--header-timeout-s", "1",
        "--body-timeout-s", "1",
        "--max-buffered-bytes", str(1024 * 1024),
        "--max-body-bytes", str(700 * 1024),
        "--max-sessions-per-client", "3",
        "--max-sessions", "5",
    ]  # fmt: skip
    token_file = tmp / "tokens"
    token_file.write_text(f"  # indented comment\n{TOKEN_A}\n{TOKEN_B}\n")
    with spawn_http_server([*argv, "--auth-token-file", str(token_file)]) as (url, _process):
        yield url


def test_headers_that_dribble_are_cut_off_and_a_real_client_is_still_served(template: str) -> None:
    dribblers = []
    for _ in range(40):
        sock = socket.create_connection(_addr(template))
        sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        dribblers.append(sock)
    silent = socket.create_connection(_addr(template))
    half_line = socket.create_connection(_addr(template))
    half_line.sendall(b"POS")
    try:
        started = time.monotonic()
        with HttpWire(template, token=TOKEN_A) as wire:
            wire.initialize()
            assert wire.request("ping")["result"] == {}
        assert time.monotonic() - started < 3, "a real client waited behind the dribblers"
        for sock in dribblers[:5]:
            sock.sendall(b"X-Slow: 1\r\n")
        for sock in [*dribblers, half_line]:
            answer = _closed_within(sock, 6)
            assert answer is not None, "a connection short of its headers stayed open past the header deadline"
            assert answer.startswith(b"HTTP/1.1 408"), answer[:80]
        assert _closed_within(silent, 10) == b"", "a silent connection stayed open"
    finally:
        for sock in [*dribblers, silent, half_line]:
            sock.close()


@pytest.fixture(scope="module")
def capped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server with room for 20 connections, two credentials, and headers allowed to take their time."""
    tmp = tmp_path_factory.mktemp("capped")
    (tmp / "tokens").write_text(f"{TOKEN_A}\n{TOKEN_B}\n")
    argv = [*SERVERS["template"](tmp), "--max-connections", "20", "--header-timeout-s", "30"]
    with spawn_http_server([*argv, "--auth-token-file", str(tmp / "tokens")]) as (url, _process):
        yield url


def test_connections_that_never_send_a_request_cannot_fill_the_connection_cap(capped: str) -> None:
    """At --max-connections, a new connection closes the one that has waited longest without a request in
    flight: connections holding a slot for nothing (any anonymous client can open them) cannot lock others out,
    and one with a request in flight (a session's GET stream here) is never the one closed."""
    url = capped
    with HttpWire(url, token=TOKEN_A) as listener:
        listener.initialize()
        stream = socket.create_connection(_addr(url))
        stream.sendall(
            (
                "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
                f"Authorization: Bearer {TOKEN_A}\r\n"
                f"Mcp-Session-Id: {listener.session_id}\r\nMCP-Protocol-Version: 2025-11-25\r\n\r\n"
            ).encode()
        )
        assert stream.recv(12) == b"HTTP/1.1 200"
        squatters = []
        try:
            for index in range(40):
                sock = socket.create_connection(_addr(url))
                if index % 2:
                    sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # half the headers, then nothing
                squatters.append(sock)
            time.sleep(0.3)
            for _ in range(3):
                with HttpWire(url, token=TOKEN_B) as client:
                    assert "result" in client.initialize(), "a client was locked out by connections doing nothing"
                    assert client.request("ping")["result"] == {}
            closed = [sock for sock in squatters if _closed_within(sock, 0.05) is not None]
            assert len(closed) >= 20, f"only {len(closed)} of 40 idle connections were closed at a 20 cap"
            assert _closed_within(stream, 0.5) is None, "the GET stream, a request in flight, was closed"
        finally:
            for sock in [*squatters, stream]:
                sock.close()


def test_one_credentials_slow_bodies_cannot_fill_the_connection_cap(capped: str) -> None:
    """Requests whose bodies are still coming hold their connections; one credential may have a quarter of
    --max-connections of them (5 here), so its slow bodies cannot lock the other credentials out."""
    slow = []
    try:
        for _ in range(25):
            sock = socket.create_connection(_addr(capped))
            sock.sendall(_head("/mcp", f"Authorization: Bearer {TOKEN_A}", length=100) + b"{")
            slow.append(sock)
        time.sleep(0.3)
        with HttpWire(capped, token=TOKEN_B) as other:
            assert "result" in other.initialize(), "one credential's slow bodies locked another out"
            assert other.request("ping")["result"] == {}
        answers = [_answer(sock) for sock in slow]
        waiting = [answer for answer in answers if answer is None]
        assert len(waiting) <= 5, f"{len(waiting)} of one credential's slow bodies are still being read"
        assert all(answer.startswith(b"HTTP/1.1 503") for answer in answers if answer), answers
    finally:
        for sock in slow:
            sock.close()


def test_one_credentials_listen_streams_cannot_fill_the_connection_cap(capped: str) -> None:
    """A 2026-era `subscriptions/listen` stream is a request in flight for as long as the client likes; one
    credential may have a quarter of --max-connections requests in flight (5 here), streams included."""
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 900,
            "method": "subscriptions/listen",
            "params": with_envelope({"notifications": {"resourcesListChanged": True}}),
        }
    ).encode()
    listening = []
    try:
        for _ in range(25):
            sock = socket.create_connection(_addr(capped))
            headers = [f"Authorization: Bearer {TOKEN_A}", f"MCP-Protocol-Version: {MODERN}"]
            sock.sendall(_head("/mcp", *headers, "Mcp-Method: subscriptions/listen", length=len(body)) + body)
            listening.append(sock)
            time.sleep(0.02)  # one at a time: each is a request in flight before the next connects
        time.sleep(0.3)
        with HttpWire(capped, token=TOKEN_B) as other:
            assert "result" in other.initialize(), "one credential's listen streams locked another out"
        answers = [_answer(sock) or b"" for sock in listening]
        streams = [answer for answer in answers if answer.startswith(b"HTTP/1.1 200")]
        assert len(streams) <= 5, f"one credential holds {len(streams)} listen streams at a 20-connection cap"
        assert any(answer.startswith(b"HTTP/1.1 503") for answer in answers)
    finally:
        for sock in listening:
            sock.close()


def test_bodies_dribbled_after_their_answer_do_not_keep_connections(capped: str) -> None:
    """An anonymous POST is answered 401 before its body is read; the rest of a body still coming then has the
    keep-alive time (5 s) to end, however it dribbles, and meanwhile its connection is not counted as busy."""
    drips = []
    try:
        for _ in range(25):
            sock = socket.create_connection(_addr(capped))
            sock.sendall(_head("/mcp", length=100_000_000) + b"{")
            drips.append(sock)
        with HttpWire(capped, token=TOKEN_B) as other:
            assert "result" in other.initialize(), "answered requests with a body still coming locked a client out"
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline and any(_answer(sock) != b"" for sock in drips):
            for sock in drips:
                with contextlib.suppress(OSError):
                    sock.send(b" ")
            time.sleep(0.5)
        still_open = [sock for sock in drips if _answer(sock) is None]
        assert not still_open, f"{len(still_open)} connections dribbling an answered request's body are held"
    finally:
        for sock in drips:
            sock.close()


@pytest.mark.parametrize("size", [40 * 1024, 1024 * 1024])
def test_oversized_headers_get_431_before_anything_is_verified(template: str, size: int) -> None:
    answer = _raw(template, _head("/mcp", "X-Pad: " + "p" * size, length=2) + b"{}")
    assert answer.startswith(b"HTTP/1.1 431"), answer[:80]
    assert b'"code": -32600' in answer


@pytest.mark.parametrize("authorized", [False, True])
def test_a_request_with_two_body_lengths_is_refused_and_its_connection_closed(template: str, authorized: bool) -> None:
    """Content-Length beside Transfer-Encoding: a proxy that goes by the length and a server that goes by the
    chunks see different requests, so what follows the chunks would be served as a request nobody sent through
    the proxy (RFC 9112 6.1: the server must close the connection after answering such a request)."""
    smuggled = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    chunks = b"0\r\n\r\n"
    auth = [f"Authorization: Bearer {TOKEN_A}"] if authorized else []
    answer = _raw(
        template,
        _head("/mcp", *auth, "Transfer-Encoding: chunked", length=len(chunks) + len(smuggled)) + chunks + smuggled,
        read_timeout=3,
    )
    assert answer.startswith(b"HTTP/1.1 400"), answer[:200]
    assert answer.count(b"HTTP/1.1 ") == 1, f"the request after the chunks was served too: {answer!r}"


def test_an_oversized_or_a_second_authorization_header_is_refused(template: str) -> None:
    big = httpx2.post(template, json=PING, headers={"Authorization": "Bearer " + "x" * 9000})
    assert big.status_code == 431
    two = _raw(
        template,
        _head("/mcp", "Authorization: Bearer wrong", f"Authorization: Bearer {TOKEN_A}", length=len(json.dumps(PING)))
        + json.dumps(PING).encode(),
    )
    assert two.startswith(b"HTTP/1.1 400"), two[:80]


def test_a_body_that_never_ends_gets_408(template: str) -> None:
    with socket.create_connection(_addr(template)) as sock:
        sock.sendall(_head("/mcp", f"Authorization: Bearer {TOKEN_A}", "Transfer-Encoding: chunked"))
        sock.sendall(b'5\r\n{"a":\r\n')
        answer = _closed_within(sock, 8)
    assert answer is not None, "the body read had no deadline"
    assert answer.startswith(b"HTTP/1.1 408"), answer[:80]


def test_bodies_held_together_past_the_budget_get_503_with_retry_after(template: str) -> None:
    size = 600 * 1024  # each under the 700 KiB body limit; two together over the 1 MiB budget
    first = socket.create_connection(_addr(template))
    try:
        first.sendall(_head("/mcp", f"Authorization: Bearer {TOKEN_A}", length=size) + b"[" * (size - 10))
        time.sleep(0.3)
        second = _raw(template, _head("/mcp", f"Authorization: Bearer {TOKEN_B}", length=size) + b" " * size)
        assert second.startswith(b"HTTP/1.1 503"), second[:120]
        assert b"retry-after: 1" in second.lower()
    finally:
        first.close()
    time.sleep(1.5)  # the first body's deadline passes and its bytes return to the budget
    with HttpWire(template, token=TOKEN_A) as wire:
        wire.initialize()
        assert wire.request("ping")["result"] == {}


def test_one_credential_cannot_hold_the_whole_body_budget(template: str) -> None:
    """A credential's bodies may hold a quarter of the budget, or one whole body if that is more (700 KiB here):
    its slow bodies can keep its own next ones waiting, never every other client's."""
    hogs = [socket.create_connection(_addr(template)) for _ in range(2)]
    opened = None
    try:
        for sock, size in zip(hogs, (600 * 1024, 400 * 1024), strict=True):
            sock.sendall(_head("/mcp", f"Authorization: Bearer {TOKEN_A}", length=size) + b" " * (size - 10 * 1024))
        time.sleep(0.3)
        body = json.dumps(INITIALIZE).encode() + b" " * (200 * 1024)
        answer = _raw(
            template, _head("/mcp", f"Authorization: Bearer {TOKEN_B}", "Connection: close", length=len(body)) + body
        )
        opened = _opened(answer)
        assert opened, f"another credential was refused while one held the budget: {answer[:200]!r}"
        own = [_closed_within(sock, 3) or b"" for sock in hogs]  # which of the two crossed the share is a race
        refused = [answer for answer in own if answer.startswith(b"HTTP/1.1 503")]
        assert len(refused) == 1, f"not one of the credential's own bodies was refused: {own!r}"
        assert b"retry-after" in refused[0].lower()
    finally:
        for sock in hogs:
            sock.close()
        if opened:
            httpx2.delete(template, headers={"Authorization": f"Bearer {TOKEN_B}", "Mcp-Session-Id": opened})


@pytest.mark.parametrize("shape", ["batch", "containers"])
def test_bodies_shaped_to_blow_up_the_parser_are_refused_before_parsing(template: str, shape: str) -> None:
    body = (
        b"[" + b"{}," * 200_000 + b"{}]"
        if shape == "batch"
        else b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":[' + b"[]," * 200_000 + b"[]]}}"
    )
    started = time.monotonic()
    refused = httpx2.post(
        template,
        content=body[: 700 * 1024 - 10] if len(body) > 700 * 1024 else body,
        headers={"Authorization": f"Bearer {TOKEN_A}", "Content-Type": "application/json"},
    )
    assert refused.status_code in (400, 413)
    assert refused.json()["error"]["code"] == -32600
    assert time.monotonic() - started < 3


CONTAINERS = 200_000
"""Empty arrays in one message: four times the guard's 50,000, and about 600 KiB, under the module's body limit."""


def _blown_up(shape: str) -> bytes:
    """A body each parser would build a few hundred thousand objects from (SDK: ~25 bytes of memory per byte)."""
    if shape == "batch":
        return b"[" + b"{}," * CONTAINERS + b"{}]"
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": with_envelope({"x": "PAD"})}
    return json.dumps(message).encode().replace(b'"PAD"', b"[" + b"[]," * CONTAINERS + b"[]]")


@pytest.mark.parametrize("shape", ["batch", "containers"])
@pytest.mark.parametrize(
    "headers",
    [
        # Each says JSON to some reader: the SDK's handshake era takes any comma-separated part, its transport
        # check any type starting with application/json, its 2026 era reads the body whatever the type; and of two
        # Content-Type headers, Starlette reads the first.
        ["Content-Type: text/plain, application/json"],
        ["Content-Type: application/json,text/plain"],
        ["Content-Type: application/json", "Content-Type: text/plain"],
        ["Content-Type: application/jsonx", f"MCP-Protocol-Version: {MODERN}"],
        ["Content-Type: Application/JSON", f"MCP-Protocol-Version: {MODERN}"],
    ],
    ids=["list-json-last", "list-json-first", "two-headers", "modern-json-prefix", "modern-case"],
)
def test_no_content_type_spelling_takes_a_body_past_the_parse_guard(
    template: str, shape: str, headers: list[str]
) -> None:
    body = _blown_up(shape)
    with socket.create_connection(_addr(template), timeout=10) as sock:
        lines = [
            "POST /mcp HTTP/1.1",
            "Host: 127.0.0.1",
            "Accept: application/json, text/event-stream",
            f"Authorization: Bearer {TOKEN_A}",
            *headers,
            f"Content-Length: {len(body)}",
            "Connection: close",
        ]
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        answer = _closed_within(sock, 10) or b""
    # The guard's own refusal: the SDK, had it parsed the body, would have served it or named the batch itself.
    assert answer.startswith(b"HTTP/1.1 400"), answer[:300]
    refused = json.loads(answer.split(b"\r\n\r\n", 1)[1])
    assert refused["error"]["code"] == -32600
    assert "over 50,000 JSON objects" in refused["error"]["message"]


@pytest.mark.parametrize(
    ("body", "code", "words"),
    [
        (b"[", -32700, "Parse error"),
        (b'[{"jsonrpc":"2.0","id":1,"method":"ping"}', -32700, "Parse error"),
        (b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]', -32600, "batches are not supported"),
        (b"[]", -32600, "batches are not supported"),
    ],
    ids=["bracket", "unclosed-batch", "batch", "empty-batch"],
)
def test_a_small_array_body_is_answered_as_on_stdio(template: str, body: bytes, code: int, words: str) -> None:
    """Refusing every body that starts with `[` before parsing it called broken JSON a batch (-32600 where
    JSON-RPC says -32700): the container cap bounds the parse, and the parser tells the two apart."""
    refused = httpx2.post(
        template,
        content=body,
        headers={
            "Authorization": f"Bearer {TOKEN_A}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        },
    )
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"]["code"] == code
    assert words in refused.json()["error"]["message"]


def test_brackets_inside_strings_are_text_not_structure(template: str, template_home: Path) -> None:
    """The container count that refuses `[[],[],...]` before parsing counts structure: a JSON document sent as a
    tool's string argument (here 60,000 objects, a note's text) is served and written whole."""
    document = json.dumps([{"n": []} for _ in range(30_000)])  # 60,000 containers in 330 KB
    with HttpWire(template, token=TOKEN_A) as wire:
        wire.initialize()
        answer = wire.request(
            "tools/call", {"name": "write_note", "arguments": {"name": "records.json", "text": document}}
        )
    assert answer["result"]["isError"] is False, answer
    assert (template_home / "notes" / "records.json").read_text() == document


SMALL_VALUES = {"strings": b'"ab",', "integers": b"1000,", "floats": b"1.5,"}
"""One JSON value per few bytes: the parser built ~170 bytes of objects for each (+291 MiB for 8 MiB of "ab")."""


def _body_of(item: bytes, size: int) -> bytes:
    """A ping of about `size` bytes whose params hold an array of `item` repeated."""
    head, tail = b'{"jsonrpc":"2.0","id":7,"method":"ping","params":{"_meta":{"x":[', b"0]}}}"
    return head + item * ((size - len(head) - len(tail)) // len(item)) + tail


def _peak_growth_kib(pid: int, action: Callable[[], Any]) -> tuple[Any, int]:
    """What `action()` returned, and how far the process's peak RSS rose above its RSS before it."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")  # resets VmHWM to the current RSS

    def status(key: str) -> int:
        line = next(x for x in Path(f"/proc/{pid}/status").read_text().splitlines() if x.startswith(key))
        return int(line.split()[1])

    before = status("VmRSS:")
    outcome = action()
    return outcome, status("VmHWM:") - before


@pytest.fixture(scope="module")
def roomy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    """The template with the default 8 MiB body limit: (URL, pid)."""
    with spawn_http_server(SERVERS["template"](tmp_path_factory.mktemp("roomy"))) as (url, process):
        yield url, process.pid


@pytest.mark.parametrize("shape", sorted(SMALL_VALUES))
def test_a_body_of_small_values_is_refused_before_it_is_built(roomy: tuple[str, int], shape: str) -> None:
    url, pid = roomy
    body = _body_of(SMALL_VALUES[shape], 8 * 1024 * 1024 - 4096)
    with HttpWire(url) as wire:
        wire.initialize()
        refused, grown = _peak_growth_kib(pid, lambda: wire.post(body))
        assert refused.status_code == 400, refused.text[:300]
        error = refused.json()["error"]
        assert error["code"] == -32600
        assert "JSON values" in error["message"], error
        assert grown <= 4 * len(body) // 1024, f"{grown} KiB of memory for a {len(body):,}-byte body"
        assert wire.request("ping")["result"] == {}


def test_a_body_within_the_value_bound_is_served(roomy: tuple[str, int]) -> None:
    """One distinct value per 128 bytes is within the bound (what it costs: bench/http_hostile.py)."""
    url, _pid = roomy
    head = b'{"jsonrpc":"2.0","id":7,"method":"ping","params":{"_meta":{"x":['
    count = (8 * 1024 * 1024 - 4096) // 128
    body = head + b",".join(b'"%0125d"' % n for n in range(count)) + b"]}}}"
    with HttpWire(url) as wire:
        wire.initialize()
        assert wire.post(body).status_code == 200


@pytest.mark.parametrize("mode", [[], ["--stateless"]], ids=["sessions", "stateless"])
def test_the_configured_body_limit_is_the_limit(tmp_path: Path, mode: list[str]) -> None:
    """Not the SDK's 4 MiB, which stateless mode kept."""
    limit = 8 * 1024 * 1024
    with (
        spawn_http_server([*SERVERS["template"](tmp_path), "--max-body-bytes", str(limit), *mode]) as (url, _p),
        HttpWire(url) as wire,
    ):
        wire.initialize()
        padded = {
            "jsonrpc": "2.0",
            "id": 5,
            "method": "ping",
            "params": {"_meta": {"pad": "x" * (4 * 1024 * 1024 + 1)}},
        }
        answer = wire.post(json.dumps(padded).encode())
        assert answer.status_code == 200, answer.text[:200]
        over = wire.post(b" " * (limit + 1))
        assert over.status_code == 413
        assert over.json()["error"]["code"] == -32600


def test_a_session_belongs_to_the_token_that_opened_it(template: str) -> None:
    with HttpWire(template, token=TOKEN_A) as owner:
        owner.initialize()
        session = owner.session_id
        assert session
        with httpx2.Client(
            headers={
                "Authorization": f"Bearer {TOKEN_B}",
                "Mcp-Session-Id": session,
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": owner.protocol_version or "",
            }
        ) as other:
            assert other.post(template, json=PING).status_code == 404
            assert other.delete(template).status_code == 404
        assert owner.request("ping")["result"] == {}, "the other token's DELETE ended the owner's session"


def test_sessions_are_capped_per_credential_and_in_total(template: str) -> None:
    held: list[HttpWire] = []
    try:
        for _ in range(3):
            wire = HttpWire(template, token=TOKEN_A)
            wire.initialize()
            held.append(wire)
        with HttpWire(template, token=TOKEN_A) as fourth:
            refused = fourth.post(INITIALIZE)
        assert refused.status_code == 429
        assert refused.headers["retry-after"]
        assert refused.json()["error"]["code"] == -32600
        for _ in range(2):
            wire = HttpWire(template, token=TOKEN_B)
            wire.initialize()
            held.append(wire)
        with HttpWire(template, token=TOKEN_B) as over_total:
            answer = over_total.post(INITIALIZE)
        assert answer.status_code == 503
        held.pop(0).close()  # DELETE: room again
        with HttpWire(template, token=TOKEN_A) as again:
            assert "result" in again.initialize()
    finally:
        for wire in held:
            wire.close()


def _opened(answer: bytes) -> str | None:
    """The session an initialize answer opened, if it did."""
    head = answer.split(b"\r\n\r\n", 1)[0].decode("latin-1").lower()
    if not head.startswith("http/1.1 200"):
        return None
    return next(
        (line.split(":", 1)[1].strip() for line in head.split("\r\n") if line.startswith("mcp-session-id:")), None
    )


def test_initializes_sent_together_cannot_open_more_than_the_credentials_share(template: str) -> None:
    """The cap is counted when an initialize arrives: ones whose bodies come together must count each other."""
    body = json.dumps(INITIALIZE).encode()
    racing = [socket.create_connection(_addr(template), timeout=10) for _ in range(6)]
    opened: list[str] = []
    try:
        for sock in racing:  # every request past the cap check, its body still to come
            sock.sendall(_head("/mcp", f"Authorization: Bearer {TOKEN_A}", "Connection: close", length=len(body)))
        time.sleep(0.3)
        for sock in racing:
            sock.sendall(body)
        opened = [sid for sock in racing if (sid := _opened(_closed_within(sock, 10) or b""))]
        # The other credential still finds the room the total cap leaves it.
        with HttpWire(template, token=TOKEN_B) as other:
            assert "result" in other.initialize(), "one credential's racing initializes took every session"
        assert len(opened) <= 3, f"one credential opened {len(opened)} sessions past its cap of 3"
    finally:
        for sock in racing:
            sock.close()
        for session in opened:
            httpx2.delete(template, headers={"Authorization": f"Bearer {TOKEN_A}", "Mcp-Session-Id": session})


def test_a_credential_at_its_session_cap_still_makes_sessionless_requests(template: str) -> None:
    """The cap is on sessions: a 2026-era request opens none, whether the credential holds its share or sends
    many such requests at once."""
    held = [HttpWire(template, token=TOKEN_A) for _ in range(3)]
    try:
        for wire in held:
            wire.initialize()
        with HttpWire(template, token=TOKEN_A) as modern, ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(lambda _: modern.modern_request("tools/list"), range(8)))
        assert all(answer["result"]["tools"] for answer in answers)
    finally:
        for wire in held:
            wire.close()


def test_a_token_removed_from_the_token_file_stops_working_without_a_restart(tmp_path: Path) -> None:
    """As a key removed from the JWKS file: a leaked static token is revoked by editing the file, within seconds,
    its open sessions included; a token added works at once; a file edited into something invalid keeps the
    tokens it held (and says why in the log)."""
    leaked, added = "leaked-" + "l" * 40, "added-" + "d" * 40
    tokens = tmp_path / "tokens"
    tokens.write_text(f"{TOKEN_A}\n{leaked}\n")
    with spawn_http_server([*SERVERS["template"](tmp_path), "--auth-token-file", str(tokens)]) as (url, _process):
        with HttpWire(url, token=leaked) as thief:
            thief.initialize()
            tokens.write_text(f"{TOKEN_A}\n{added}\n")
            deadline = time.monotonic() + 10
            while thief.post(PING).status_code != 401 and time.monotonic() < deadline:
                time.sleep(0.2)
            assert thief.post(PING).status_code == 401, "a token removed from the file still opened its session"
        with HttpWire(url, token=added) as newcomer:
            assert "result" in newcomer.initialize()
        tokens.write_text(f"{TOKEN_A}\nshort\n")  # a broken edit: refused, the tokens before it kept
        time.sleep(1.5)
        with HttpWire(url, token=added) as still:
            assert "result" in still.initialize()
        with HttpWire(url, token="short") as short:
            assert short.post(PING).status_code == 401


def test_jwt_lifetime_scope_and_revocation(tmp_path: Path) -> None:
    key, spare = _key(), _key()
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps({"keys": [_jwk(key, "k1"), _jwk(spare, "k2")]}))
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    argv = [
        *SERVERS["template"](tmp_path),
        "--jwks-file",
        str(jwks),
        "--jwt-issuer",
        ISSUER,
        "--jwt-required-scope",
        "notes",
    ]

    def token(signer: Any = key, kid: str = "k1", **claims: Any) -> str:
        now = int(time.time())
        payload = {"iss": ISSUER, "aud": url, "sub": "alice", "iat": now, "exp": now + 300, "scope": "notes", **claims}
        return jwt.encode(
            {k: v for k, v in payload.items() if v is not None}, signer, algorithm="RS256", headers={"kid": kid}
        )

    def status(value: str) -> httpx2.Response:
        return httpx2.post(
            url,
            json=PING,
            headers={"Authorization": f"Bearer {value}", "Accept": "application/json, text/event-stream"},
        )

    with spawn_http_server(argv, port=port):
        assert status(token()).status_code != 401
        assert status(token(exp=None)).status_code == 401, "a JWT without exp was accepted"
        now = int(time.time())
        assert status(token(iat=now, exp=now + 10 * 86_400)).status_code == 401, "a ten-day JWT was accepted"
        # An `iat` in the future says nothing about how long the token is good for from now.
        future = now + 365 * 86_400
        assert status(token(iat=future, exp=future + 60)).status_code == 401, "a JWT good for a year was accepted"
        scopeless = status(token(scope="other"))
        assert scopeless.status_code == 403
        assert 'error="insufficient_scope"' in scopeless.headers["www-authenticate"]
        # /metrics takes the endpoint's token: the scope the endpoint requires included.
        metrics = url.removesuffix("/mcp") + "/metrics"
        assert httpx2.get(metrics, headers={"Authorization": f"Bearer {token()}"}).status_code == 200
        assert httpx2.get(metrics, headers={"Authorization": f"Bearer {token(scope='other')}"}).status_code == 403
        assert status(token(spare, "k2")).status_code != 401
        jwks.write_text(json.dumps({"keys": [_jwk(key, "k1")]}))  # revoke k2
        deadline = time.monotonic() + 10
        while status(token(spare, "k2")).status_code != 401 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert status(token(spare, "k2")).status_code == 401, "a removed key still verified tokens"


def test_jwt_beyond_loopback_without_a_public_url_refuses_to_start(tmp_path: Path) -> None:
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps({"keys": [_jwk(_key(), "k1")]}))
    argv = [
        *SERVERS["template"](tmp_path),
        "--transport",
        "http",
        "--host",
        "0.0.0.0",
        "--port",
        str(free_port()),
        "--jwks-file",
        str(jwks),
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert "--public-url" in done.stderr


@pytest.fixture(scope="module")
def db_for_two(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("fair")
    tokens = tmp / "tokens"
    tokens.write_text(f"{TOKEN_A}\n{TOKEN_B}\n")
    argv = [
        *SERVERS["db"](tmp),
        "--auth-token-file",
        str(tokens),
        "--max-queued-calls-per-client",
        "4",
        "--call-timeout-s",
        "2",
    ]
    with spawn_http_server(argv) as (url, _process):
        yield url


def _query(url: str, token: str, sql: str) -> tuple[dict[str, Any], float]:
    started = time.monotonic()
    with HttpWire(url, token=token) as wire:
        wire.initialize()
        answer = wire.request("tools/call", {"name": "run_query", "arguments": {"sql": sql}})
    return answer, time.monotonic() - started


def test_one_clients_slow_and_abandoned_calls_do_not_make_another_wait(db_for_two: str) -> None:
    with ThreadPoolExecutor(16) as pool:
        flood = [pool.submit(_query, db_for_two, TOKEN_A, SLOW_SQL) for _ in range(14)]
        time.sleep(1.0)
        answer, waited = _query(db_for_two, TOKEN_B, "SELECT 1 AS one")
        floods = [f.result() for f in flood]
    assert answer["result"]["structuredContent"]["rows"] == [[1]]
    assert waited < 2.5, f"another client's SELECT 1 waited {waited:.1f} s behind the flood"
    texts = [a["result"]["content"][0]["text"] for a, _ in floods]
    assert any("Too many calls from this client" in t for t in texts), "no call was turned away past the queue"
    assert any("did not finish within 2 s" in t for t in texts)
    # The abandoned calls were cancelled in SQLite: the flood's client is served again at once.
    answer, waited = _query(db_for_two, TOKEN_A, "SELECT 2 AS two")
    assert answer["result"]["structuredContent"]["rows"] == [[2]]
    assert waited < 2.5


def test_the_hostile_module_speaks_to_every_server_front(tmp_path: Path) -> None:
    """The connection-level bounds are the helpers': every server's front answers a slow header the same way."""
    for name in sorted(SERVERS):
        (tmp_path / name).mkdir()
        with spawn_http_server([*SERVERS[name](tmp_path / name), "--header-timeout-s", "1"]) as (url, _process):
            with socket.create_connection(_addr(url)) as sock:
                sock.sendall(b"POST /mcp HTTP/1.1\r\n")
                answer = _closed_within(sock, 6)
            assert answer is not None, name
            assert answer.startswith(b"HTTP/1.1 408"), (name, answer)
            over = _raw(url, _head("/mcp", "X-Pad: " + "p" * 40_000, length=2) + b"{}")
            assert over.startswith(b"HTTP/1.1 431"), name
