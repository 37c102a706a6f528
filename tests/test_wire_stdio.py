"""Every server over stdio, byte for byte: the handshake, the error codes, and a clean exit."""

from __future__ import annotations

import itertools
import json
import subprocess
import threading
import time
from pathlib import Path

import pytest
from mcp_server_core.testing import StdioWire
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from tests.conftest import SERVERS, fake_module

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602


@pytest.mark.parametrize("version", HANDSHAKE_PROTOCOL_VERSIONS)
def test_each_handshake_version_is_accepted_as_offered(stdio: StdioWire, version: str) -> None:
    result = stdio.initialize(version)["result"]
    assert result["protocolVersion"] == version
    assert "tools" in result["capabilities"]


def test_an_unknown_version_gets_the_servers_latest(stdio: StdioWire) -> None:
    assert stdio.initialize("1999-01-01")["result"]["protocolVersion"] == HANDSHAKE_PROTOCOL_VERSIONS[-1]


def test_nothing_but_json_rpc_reaches_stdout(stdio: StdioWire) -> None:
    stdio.initialize()
    stdio.request("tools/list")
    stdio.request("ping")
    stdio.send("not json")
    stdio.receive()
    assert stdio.close() == 0
    assert stdio.raw_lines
    for line in stdio.raw_lines:
        assert line.endswith(b"\n")
        assert json.loads(line)["jsonrpc"] == "2.0"


def test_malformed_json_gets_a_parse_error_and_the_server_keeps_serving(stdio: StdioWire) -> None:
    stdio.initialize()
    stdio.send('{"jsonrpc": "2.0", "id": 5, "method": ')
    error = stdio.receive()
    assert error["id"] is None
    assert error["error"]["code"] == PARSE_ERROR
    assert stdio.request("ping")["result"] == {}


def test_invalid_utf8_is_a_parse_error(stdio: StdioWire) -> None:
    stdio.initialize()
    stdio.send(b'{"jsonrpc":"2.0","id":1,"method":"ping\xff\xfe"}')
    assert stdio.receive()["error"]["code"] == PARSE_ERROR
    assert stdio.request("ping")["result"] == {}


@pytest.mark.parametrize(
    ("line", "expected_id"),
    [
        ('{"jsonrpc": "2.0", "id": 9, "params": {}}', 9),
        ('{"jsonrpc": "1.0", "id": "a", "method": "ping"}', "a"),
        ('{"jsonrpc": "2.0", "id": true, "method": "ping"}', None),
        ('{"jsonrpc": "2.0", "\\u0069d": 1.5, "method": "ping"}', None),  # "id", spelled with an escape
        ("[1, 2]", None),
        ('[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]', None),
        ("42", None),
    ],
)
def test_json_that_is_not_a_request_is_an_invalid_request(stdio: StdioWire, line: str, expected_id: object) -> None:
    stdio.initialize()
    stdio.send(line)
    error = stdio.receive()
    assert error["error"]["code"] == INVALID_REQUEST
    assert error["id"] == expected_id
    assert stdio.request("ping")["result"] == {}


def test_an_unknown_method_is_method_not_found(stdio: StdioWire) -> None:
    stdio.initialize()
    assert stdio.request("tools/frobnicate")["error"]["code"] == METHOD_NOT_FOUND


def test_a_request_before_initialize_says_to_initialize_first(stdio: StdioWire) -> None:
    error = stdio.request("tools/list")["error"]
    assert error["code"] == INVALID_PARAMS
    assert "initialize" in error["message"]
    assert stdio.initialize()["result"]


@pytest.mark.parametrize("version", [5, None], ids=["a-number", "missing"])
def test_a_malformed_initialize_names_the_field_not_the_handshake(stdio: StdioWire, version: object) -> None:
    """The client did send initialize: telling it to send initialize first leaves it nothing to fix."""
    hello = {"capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    error = stdio.request("initialize", hello if version is None else {**hello, "protocolVersion": version})["error"]
    assert error["code"] == INVALID_PARAMS
    assert "Not initialized" not in error["message"]
    assert "protocolVersion" in error["message"]
    assert stdio.initialize()["result"]["protocolVersion"] == HANDSHAKE_PROTOCOL_VERSIONS[-1]


def test_malformed_params_name_the_field(stdio: StdioWire) -> None:
    stdio.initialize()
    error = stdio.request("tools/call", {"nam": "x"})["error"]
    assert error["code"] == INVALID_PARAMS
    assert "name" in error["message"]


@pytest.mark.parametrize("method", ["tools/list", "resources/list", "resources/templates/list", "prompts/list"])
def test_a_cursor_the_server_never_issued_is_invalid_params(stdio: StdioWire, method: str) -> None:
    """The spec: an invalid cursor SHOULD be -32602. Answered with the first page instead, a client paging on
    a stale cursor appends the whole list again and shows every entry twice."""
    stdio.initialize()
    first = stdio.request(method)["result"]
    assert "nextCursor" not in first  # everything in one page: no cursor was ever issued
    error = stdio.request(method, {"cursor": "c2VlbiBpbiBhbm90aGVyIHNlcnZlcg=="})["error"]
    assert error["code"] == INVALID_PARAMS
    assert "cursor" in error["message"]


def test_ping_works_before_and_after_the_handshake(stdio: StdioWire) -> None:
    assert stdio.request("ping")["result"] == {}
    stdio.initialize()
    assert stdio.request("ping")["result"] == {}


def test_a_huge_line_is_refused_without_killing_the_server(stdio: StdioWire) -> None:
    stdio.initialize()
    huge = json.dumps({"jsonrpc": "2.0", "id": 77, "method": "ping", "params": {"pad": "x" * (9 * 1024 * 1024)}})
    stdio.send(huge)
    error = stdio.receive(timeout=30)
    assert error["id"] == 77, "the id in the line's first bytes is answered: the caller waits for no timeout"
    assert error["error"]["code"] == INVALID_REQUEST
    assert "exceeds" in error["error"]["message"]
    assert stdio.request("ping")["result"] == {}


def test_a_large_but_allowed_line_is_served(stdio: StdioWire) -> None:
    stdio.initialize()
    answer = stdio.request("ping", {"_meta": {"pad": "y" * (2 * 1024 * 1024)}}, timeout=30)
    assert answer["result"] == {}


@pytest.mark.parametrize("item", [b'"ab",', b"1000,", b"[],"], ids=["strings", "integers", "arrays"])
def test_a_line_of_small_values_is_refused_before_it_is_built(tmp_path: Path, item: bytes) -> None:
    """The HTTP body's cost bound holds on stdio too (one line, one message): 8 MiB of "ab" built 291 MiB."""
    head, tail = b'{"jsonrpc":"2.0","id":7,"method":"ping","params":{"_meta":{"x":[', b"0]}}}"
    line = head + item * ((8 * 1024 * 1024 - 4096) // len(item)) + tail
    with StdioWire(SERVERS["template"](tmp_path)) as wire:
        wire.initialize()
        wire.send(line)
        error = wire.receive(timeout=30)["error"]
        assert error["code"] == INVALID_REQUEST
        assert "JSON values" in error["message"] or "JSON objects and arrays" in error["message"], error
        assert wire.request("ping")["result"] == {}


def test_closing_stdin_exits_cleanly_and_answers_what_was_asked(stdio: StdioWire) -> None:
    stdio.initialize()
    for request_id in range(100, 110):
        stdio.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/list"})
    assert stdio.close() == 0
    answered = {json.loads(line).get("id") for line in stdio.raw_lines}
    assert set(range(100, 110)) <= answered


def test_concurrent_requests_each_get_their_own_answer(stdio: StdioWire) -> None:
    stdio.initialize()
    ids = list(range(1000, 1050))
    for request_id in ids:
        method = "tools/list" if request_id % 2 else "ping"
        stdio.send({"jsonrpc": "2.0", "id": request_id, "method": method})
    answers = {}
    while len(answers) < len(ids):
        message = stdio.receive()
        if "id" in message:
            answers[message["id"]] = message
    assert sorted(answers) == ids
    assert all("result" in answers[i] for i in ids)
    assert all("tools" in answers[i]["result"] for i in ids if i % 2)


def test_cancelling_a_call_in_flight_stops_it_and_suppresses_its_answer(tmp_path: Path) -> None:
    # The conformance fixtures include a tool that takes ~100 ms: long enough to cancel while it runs.
    argv = [*SERVERS["template"](tmp_path), "--conformance"]
    with StdioWire(argv) as wire:
        wire.initialize()
        wire.send(
            {
                "jsonrpc": "2.0",
                "id": 600,
                "method": "tools/call",
                "params": {"name": "test_tool_with_progress", "arguments": {}, "_meta": {"progressToken": "p"}},
            }
        )
        # Sent right behind the call: the server reads it while the ~100 ms tool is still running.
        wire.notify("notifications/cancelled", {"requestId": 600, "reason": "user pressed stop"})
        assert wire.request("ping")["result"] == {}
        time.sleep(0.5)  # well past the tool's own duration
        assert wire.request("ping")["result"] == {}
        assert wire.close() == 0
    answers = [json.loads(line) for line in wire.raw_lines]
    assert not [a for a in answers if a.get("id") == 600], "a cancelled request must not be answered"
    progress = [a for a in answers if a.get("method") == "notifications/progress"]
    assert len(progress) < 3, "the tool went on after its cancellation"


def test_a_cancelled_request_is_not_answered_and_the_server_goes_on(stdio: StdioWire) -> None:
    stdio.initialize()
    stdio.send({"jsonrpc": "2.0", "id": 500, "method": "tools/list"})
    stdio.notify("notifications/cancelled", {"requestId": 500, "reason": "test"})
    assert stdio.request("ping")["result"] == {}
    time.sleep(0.2)
    stdio.close()
    answers = [json.loads(line) for line in stdio.raw_lines]
    # A cancel that arrives after the answer is legal; one that arrives first must suppress it.
    assert sum(1 for a in answers if a.get("id") == 500) <= 1


def test_the_server_exits_when_its_client_stops_reading_and_leaves(server_argv: list[str]) -> None:
    process = subprocess.Popen(server_argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert process.stdin is not None
    assert process.stdout is not None
    hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    lines = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}]
    lines += [{"jsonrpc": "2.0", "id": n, "method": "tools/list"} for n in range(2, 40)]
    process.stdin.write(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
    process.stdin.flush()
    process.stdout.close()  # the client vanishes mid-answer: the server's writes now hit a broken pipe
    process.stdin.close()
    try:
        code = process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        pytest.fail("the server hung after its client left")
    assert code in (0, 1), code


def test_what_the_server_logged_is_readable_after_the_wire_closes(tmp_path: Path) -> None:
    with StdioWire([*SERVERS["template"](tmp_path), "--log-level", "DEBUG"]) as wire:
        wire.initialize()
    assert "DEBUG" in wire.stderr


def test_a_tool_failure_is_not_logged_as_a_server_fault(tmp_path: Path) -> None:
    """A missing note is the model's to act on: hosts show a server's ERROR lines as the server failing."""
    with StdioWire([*SERVERS["template"](tmp_path), "--log-level", "WARNING"]) as wire:
        wire.initialize()
        answer = wire.request("tools/call", {"name": "read_note", "arguments": {"name": "missing"}})
        assert answer["result"]["isError"] is True
        assert wire.close() == 0
        stderr = wire.stderr
    assert "ERROR" not in stderr, stderr
    assert "Error calling tool" not in stderr, stderr


MISSING_RESOURCES = {
    "template": lambda tmp: "note://missing",
    "db": lambda tmp: "db://tables/no_such_table",
    "filesystem": lambda tmp: (tmp / "no-such-file.txt").as_uri(),
}
"""A URI each server's resource template matches, naming nothing that exists."""


@pytest.mark.parametrize("server", sorted(MISSING_RESOURCES))
def test_a_missing_resource_is_invalid_params_whether_or_not_a_template_matches(server: str, tmp_path: Path) -> None:
    """One code for one condition (SEP-2164: -32602), with the URI in data; never -32603, an internal error."""
    uri = MISSING_RESOURCES[server](tmp_path)
    with StdioWire(SERVERS[server](tmp_path)) as wire:
        wire.initialize()
        templated = wire.request("resources/read", {"uri": uri})
        unmatched = wire.request("resources/read", {"uri": "nothing://here"})
    for answer, asked in ((templated, uri), (unmatched, "nothing://here")):
        assert answer["error"]["code"] == INVALID_PARAMS, answer
        assert answer["error"]["data"] == {"uri": asked}


def test_each_failed_call_log_line_says_which_side_failed(tmp_path: Path) -> None:
    with StdioWire([*SERVERS["template"](tmp_path), "--log-level", "INFO"]) as wire:
        wire.initialize()
        wire.request("tools/call", {"name": "read_note", "arguments": {"name": "missing"}})
        wire.request("tools/call", {"name": "no_such_tool", "arguments": {}})
        assert wire.close() == 0
        stderr = wire.stderr
    assert "[tool failure] Error calling tool 'read_note'" in stderr, stderr
    assert "[protocol error -32602] tools/call" in stderr, stderr


def test_each_progress_notification_of_a_call_moves_forward(tmp_path: Path) -> None:
    """The spec: a call's progress MUST increase with each notification. A call whose work has phases counts
    afresh in each (Slack: channels listed to find '#busy', then messages read, then people listed to name
    their authors: 227, then 100), so the helpers hold back a report that would not move it forward."""
    fake = fake_module("slack", "packages/mcp-server-slack/tests/fake_slack.py")
    argv = SERVERS["slack"](tmp_path)  # starts the session's fake Slack first
    slow = {"conversations.list": 0.6, "conversations.history": 0.6, "users.list": 0.6}  # past the rate limit
    fake.FAKE.latency_s.update(slow)
    try:
        with StdioWire(argv) as wire:
            wire.initialize()
            params = {"name": "read_messages", "arguments": {"channel": "#busy", "limit": 100}}
            answer = wire.request("tools/call", {**params, "_meta": {"progressToken": "phases"}}, timeout=60)
    finally:
        for method in slow:
            fake.FAKE.latency_s.pop(method, None)
    assert answer["result"]["isError"] is False, answer
    heard = [n["params"] for n in wire.notifications if n["method"] == "notifications/progress"]
    assert heard, "the call reported no progress: the fake answered faster than the helpers' interval"
    values = [p["progress"] for p in heard]
    assert all(later > earlier for earlier, later in itertools.pairwise(values)), heard


def test_a_client_that_sends_without_reading_is_held_back_not_buffered(tmp_path: Path) -> None:
    """A client that writes requests and never reads the answers: each answer waits for stdout, and a server
    that went on reading would hold every one of them (and its task) until it ran out of memory. It stops
    reading once a bounded number wait instead, so the client's writes block; once the client reads, every
    request is answered. The stdio transport is the helpers' own, the same for every server: one suffices."""
    total = 6_000  # more than fit in the two pipes (64 kB each) and the server's bound together
    argv = SERVERS["template"](tmp_path)
    process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert process.stdin is not None
    assert process.stdout is not None
    try:
        hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        process.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}).encode())
        process.stdin.write(b'\n{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        process.stdin.flush()
        assert json.loads(process.stdout.readline())["id"] == 0
        sent = 0

        def send_all() -> None:
            nonlocal sent
            assert process.stdin is not None
            for request_id in range(1, total + 1):
                process.stdin.write(b'{"jsonrpc": "2.0", "id": %d, "method": "ping"}\n' % request_id)
                process.stdin.flush()
                sent += 1

        sender = threading.Thread(target=send_all, daemon=True)
        sender.start()
        # Without a bound the server takes every request, hundreds a second; with one, the pipe fills and the
        # client's writes block for good: two seconds without one taken is far beyond any scheduling pause.
        last, still_since, deadline = -1, time.monotonic(), time.monotonic() + 120
        while sent < total and time.monotonic() < deadline and time.monotonic() - still_since < 2:
            if sent != last:
                last, still_since = sent, time.monotonic()
            time.sleep(0.05)
        assert sent < total, "the server read every request while none of its answers were read"
        answered = {json.loads(process.stdout.readline())["id"] for _ in range(total)}
        sender.join(timeout=60)
        assert answered == set(range(1, total + 1))
        process.stdin.close()
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdout.close()


PROMPTS_WITH_A_REQUIRED_ARGUMENT = {"template": ("summarize_notes", "topic"), "db": ("explore_table", "table")}


@pytest.mark.parametrize("server", sorted(PROMPTS_WITH_A_REQUIRED_ARGUMENT))
def test_a_prompt_without_its_required_argument_is_the_clients_mistake(server: str, tmp_path: Path) -> None:
    """-32602 naming the argument, logged as a protocol error: not an '[upstream failure]' with a traceback,
    which sends the operator looking at an upstream that did nothing wrong."""
    prompt, argument = PROMPTS_WITH_A_REQUIRED_ARGUMENT[server]
    with StdioWire([*SERVERS[server](tmp_path), "--log-level", "INFO"]) as wire:
        wire.initialize()
        error = wire.request("prompts/get", {"name": prompt, "arguments": {}})["error"]
        assert wire.close() == 0
        stderr = wire.stderr
    assert error["code"] == INVALID_PARAMS
    assert repr(argument) in error["message"]
    assert "{" not in error["message"], "a Python set is not a message"
    assert "[upstream failure]" not in stderr, stderr
    assert "Traceback" not in stderr, stderr
    assert "[protocol error -32602] prompts/get" in stderr, stderr


@pytest.mark.parametrize("server", sorted(PROMPTS_WITH_A_REQUIRED_ARGUMENT))
def test_a_text_prompt_argument_is_not_described_as_a_json_schema(server: str, tmp_path: Path) -> None:
    """fastmcp notes a JSON schema in a prompt argument's description unless its annotation is `str` itself;
    under `from __future__ import annotations` it is the string 'str', so every text argument read 'Provide a
    value matching {"type":"string"}. Encode non-string values as JSON.': noise in place of a description."""
    with StdioWire(SERVERS[server](tmp_path)) as wire:
        wire.initialize()
        prompts = wire.request("prompts/list")["result"]["prompts"]
    descriptions = [a.get("description") or "" for p in prompts for a in p.get("arguments", [])]
    assert descriptions
    assert not [d for d in descriptions if '{"type":"string"}' in d], descriptions


def test_one_client_holds_at_most_a_thousand_subscriptions(tmp_path: Path) -> None:
    """Any URI a template matches could be subscribed to, each kept for the session (and watched, for files):
    one client asked for 1,001 and would have had them all. The cap is per client; what is held still works."""
    with StdioWire(SERVERS["template"](tmp_path)) as wire:
        wire.initialize()
        for n in range(1_000):
            assert wire.request("resources/subscribe", {"uri": f"note://n{n}"})["result"] == {}
        refused = wire.request("resources/subscribe", {"uri": "note://one-more"})
        assert refused["error"]["code"] == -32602
        assert "At most 1,000" in refused["error"]["message"]
        assert wire.request("resources/subscribe", {"uri": "note://n7"})["result"] == {}, "held already: fine"
        assert wire.request("resources/unsubscribe", {"uri": "note://n7"})["result"] == {}
        assert wire.request("resources/subscribe", {"uri": "note://one-more"})["result"] == {}
        # A subscription kept through all this still hears its resource change.
        wire.request("tools/call", {"name": "write_note", "arguments": {"name": "n3", "text": "hello"}})
        updated = wire.wait_for_notification("notifications/resources/updated")
        assert updated["params"]["uri"] == "note://n3"
        # Another client starts from none.
        with StdioWire(SERVERS["template"](tmp_path)) as other:
            other.initialize()
            assert other.request("resources/subscribe", {"uri": "note://one-more"})["result"] == {}
    with StdioWire(SERVERS["template"](tmp_path)) as modern:
        listen = modern.modern_request(
            "subscriptions/listen",
            {"notifications": {"resourceSubscriptions": [f"note://n{n}" for n in range(1_001)]}},
        )
        assert listen["error"]["code"] == -32602
