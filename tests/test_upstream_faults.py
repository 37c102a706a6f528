"""Upstream faults: a GitHub or Slack that stalls or resets connections costs a bounded wait and an isError.

Each server runs for real over stdio against `Upstream`, a TCP listener on 127.0.0.1 that misbehaves as told:

- stall: accepts and never answers;
- stall_body: reads the request, sends a response's headers and one byte of its body, then nothing;
- reset: accepts and closes at once with RST (SO_LINGER on, zero linger);
- relay: passes bytes to and from the package's own fake, so the same server is seen to recover;
- drip: sends a long body one byte per half timeout, which no per-read timeout ends: the server's whole-call
  deadline (`--call-timeout-s`, the helpers' ReferenceServer) answers it.

A failed call may take what the server's own retry policy allows and no more: every attempt's timeout, the
backoff between attempts, and a margin for a first call's imports. The bound is computed from the objects the
servers build, and capped, so a policy that grows the wait fails here instead of raising the bound.
Meanwhile the server answers ping; afterwards it takes the next call, and it exits 0 when stdin closes.

One server per kind serves the whole module (starting one costs about three seconds of imports), so every test
also proves that the faults before it left the server sound.
"""

from __future__ import annotations

import contextlib
import importlib.util
import itertools
import re
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import pytest
from mcp_server_core.testing import StdioWire, WireError, python_module

from tests.conftest import ROOT

# Deadlines and latencies are measured here: run alone, after the parallel phase (`make pytest`).
pytestmark = pytest.mark.serial

Mode = Literal["stall", "stall_body", "reset", "relay", "drip"]

TIMEOUT_S = 1
"""Each server's per-request timeout here: short, so that a test stays fast and a missed bound shows."""
MARGIN_S = 2.0
"""Beyond the retry policy: a first call's lazy imports in the worker (about 0.5 s) and a loaded machine."""
CAP_S = 8.0
"""No policy may make a failed call wait longer than this at a 1 s timeout, whatever it computes."""
_call_ids = (f"upstream-call-{n}" for n in itertools.count(1))
"""Strings, so they never meet the ids StdioWire counts for its own requests; never reused within a session."""


def _load(name: str, path: str) -> Any:
    """A package's fake from its own tests, loaded by path (the packages' tests/ folders are not packages)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return module


fake_github = _load("upstream_faults_fake_github", "packages/mcp-server-github/tests/fake_github.py")
fake_slack = _load("upstream_faults_fake_slack", "packages/mcp-server-slack/tests/fake_slack.py")


# --- the misbehaving upstream --------------------------------------------------------------------------------


class Upstream:
    """A listener that stalls, resets or relays every connection, as `mode` says at the moment it accepts."""

    def __init__(self, relay_to: tuple[str, int]) -> None:
        self._mode: Mode = "stall"
        self.relay_to = relay_to
        self.accepted = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.05)  # the accept loop looks at `_stopped` this often
        self.port: int = self._listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._stopped = threading.Event()
        self._sockets: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._spawn(self._accept)

    @property
    def mode(self) -> Mode:
        return self._mode

    @mode.setter
    def mode(self, mode: Mode) -> None:
        """Cuts the connections open, too: a client's kept-alive connection would go on meeting the old mode."""
        with self._lock:
            self._mode = mode
        self.cut()

    def _spawn(self, target: Callable[..., None], *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        with self._lock:
            self._threads.append(thread)
        thread.start()

    def _hold(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted += 1
            with self._lock:  # with the mode setter: a connection is either cut or meets the new mode
                mode = self._mode
                if mode != "reset":
                    self._sockets.append(client)
            if mode == "reset":
                client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                client.close()
            elif mode == "stall_body":
                self._spawn(self._answer_headers_only, client)
            elif mode == "drip":
                self._spawn(self._drip, client)
            elif mode == "relay":
                self._spawn(self._relay, client)

    def _answer_headers_only(self, client: socket.socket) -> None:
        with contextlib.suppress(OSError):
            client.recv(65536)
            client.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")

    def _drip(self, client: socket.socket) -> None:
        """One byte of a long body every half timeout: no single read waits out the timeout."""
        with contextlib.suppress(OSError):
            client.recv(65536)
            client.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n")
            while not self._stopped.wait(TIMEOUT_S / 2):
                client.sendall(b" ")

    def _relay(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(self.relay_to, timeout=5)
        except OSError:
            client.close()
            return
        upstream.settimeout(None)
        self._hold(upstream)
        self._spawn(self._pipe, upstream, client)
        self._pipe(client, upstream)

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        for sock in (source, sink):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        """Close every connection open now; new ones are still accepted."""
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def close(self) -> None:
        """Stop accepting, cut every connection and wait for every thread; safe to call twice."""
        self._stopped.set()
        self._listener.close()
        self.cut()
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(timeout=5)
            assert not thread.is_alive(), f"{thread.name} of the upstream did not stop"


# --- the servers under test, and what their retry policies allow ---------------------------------------------


@dataclass(frozen=True)
class Target:
    name: str
    token: str
    call: dict[str, Any]
    """A read tool of the default toolset that sends a request on every call, whatever is cached."""
    retries: int
    longest_backoff_s: float
    argv: Callable[[str, Path], list[str]]
    env: dict[str, str]

    @property
    def bound_s(self) -> float:
        return (self.retries + 1) * TIMEOUT_S + self.longest_backoff_s + MARGIN_S

    @property
    def call_timeout_s(self) -> float:
        """The server's whole-call deadline: past every retry the policy allows, inside the bound."""
        return self.bound_s - MARGIN_S / 2


def _github() -> Target:
    from mcp_server_github.client import BoundedRetry

    policy = BoundedRetry()  # GitHubApi builds it the same way; max_wait is for rate limits, not met here
    retries = int(policy.total)
    # urllib3 sleeps backoff_factor × 2^(n-1) before the n-th retry, and nothing before the first.
    backoff = sum(policy.backoff_factor * 2 ** (n - 1) for n in range(2, retries + 1))
    return Target(
        name="github",
        token=fake_github.TOKEN,
        call={"name": "get_issue", "arguments": {"repo": "acme/widgets", "number": 7}},
        retries=retries,
        longest_backoff_s=backoff,
        argv=lambda url, _tmp: python_module("mcp_server_github", "--api-url", url),
        # The GitHub server has no --timeout-s flag; the setting comes from its environment.
        env={"GITHUB_TOKEN": fake_github.TOKEN, "MCP_GITHUB_TIMEOUT_S": str(TIMEOUT_S)},
    )


def _slack() -> Target:
    from mcp_server_slack.api import SlackApi
    from mcp_server_slack.settings import SlackSettings
    from slack_sdk.http_retry.builtin_interval_calculators import BackoffRetryIntervalCalculator

    api = SlackApi(SlackSettings(bot_token=fake_slack.BOT_TOKEN, api_url="http://127.0.0.1:9/api/"))
    handlers = api.client("bot").retry_handlers  # the client the server builds at its first call
    # slack-sdk counts attempts once per call, across handlers: the most any one handler allows is the most made.
    retries = max(handler.max_retry_count for handler in handlers)
    backoff = 0.0
    for handler in handlers:
        calculator = handler.interval_calculator
        assert isinstance(calculator, BackoffRetryIntervalCalculator), calculator
        # backoff_factor × 2^n before retry n+1, plus RandomJitter's up to one second each time.
        backoff = max(backoff, sum(calculator.backoff_factor * 2**n + 1.0 for n in range(retries)))

    def argv(url: str, tmp: Path) -> list[str]:
        token_file = tmp / "slack-token"  # tokens never go on argv
        token_file.write_text(fake_slack.BOT_TOKEN + "\n")
        return python_module(
            "mcp_server_slack", "--token-file", str(token_file), "--api-url", f"{url}/api/", "--timeout-s", "1"
        )

    return Target(
        name="slack",
        token=fake_slack.BOT_TOKEN,
        # Not list_channels: once a listing succeeded, it is answered from the directory's cache.
        call={"name": "read_messages", "arguments": {"channel": "C0RANDOM0"}},
        retries=retries,
        longest_backoff_s=backoff,
        argv=argv,
        env={},
    )


TARGETS: dict[str, Callable[[], Target]] = {"github": _github, "slack": _slack}


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_no_retry_policy_lets_a_failed_call_wait_long(name: str) -> None:
    target = TARGETS[name]()
    assert target.retries <= 2, f"{name} retries a failed request {target.retries} times"
    assert target.bound_s <= CAP_S, f"{name}'s retry policy lets a failed call wait {target.bound_s:.1f} s"


@dataclass
class Served:
    target: Target
    upstream: Upstream
    wire: StdioWire


@pytest.fixture(scope="module")
def fakes() -> Iterator[dict[str, tuple[str, int]]]:
    """(host, port) of each package's fake, for the relay to recover to."""
    github = fake_github.FakeGitHub().start()
    slack = fake_slack.FakeSlack()
    try:
        with slack.serve():
            yield {"github": _address(github.url), "slack": _address(slack.url)}
    finally:
        github.stop()


def _address(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    assert parts.hostname is not None
    assert parts.port is not None
    return parts.hostname, parts.port


@pytest.fixture(scope="module", params=sorted(TARGETS))
def served(
    request: pytest.FixtureRequest, fakes: dict[str, tuple[str, int]], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    target = TARGETS[request.param]()
    upstream = Upstream(relay_to=fakes[target.name])
    argv = target.argv(upstream.url, tmp_path_factory.mktemp(target.name))
    argv += ["--call-timeout-s", f"{target.call_timeout_s:g}"]
    try:
        with StdioWire(argv, env=target.env) as wire:
            wire.initialize()
            yield Served(target, upstream, wire)
            upstream.cut()  # nothing of a failed test may hold the exit
            assert wire.close() == 0, "the server did not exit cleanly after the faults"
        assert target.token not in wire.stderr
    finally:
        upstream.close()


# --- calling through a fault ----------------------------------------------------------------------------------


@dataclass
class Outcome:
    result: dict[str, Any]
    elapsed_s: float
    ping_s: float
    """How long into the call the server answered a ping sent right after it."""
    connections: int

    @property
    def text(self) -> str:
        return "\n".join(block.get("text", "") for block in self.result.get("content", []))


def _call_with_ping_in_flight(served: Served) -> Outcome:
    wire, target, upstream = served.wire, served.target, served.upstream
    call_id = next(_call_ids)
    before = upstream.accepted
    started = time.monotonic()
    wire.send({"jsonrpc": "2.0", "id": call_id, "method": "tools/call", "params": target.call})
    assert wire.request("ping", timeout=target.bound_s)["result"] == {}
    ping_s = time.monotonic() - started
    answered = [m for m in wire.other_responses if m.get("id") == call_id]  # a reset may beat the ping
    answer = answered[0] if answered else wire.response_to(call_id, timeout=3 * target.bound_s)
    elapsed_s = time.monotonic() - started
    for message in answered:
        wire.other_responses.remove(message)
    assert "result" in answer, answer  # a failed tool is a result with isError, never a JSON-RPC error
    return Outcome(answer["result"], elapsed_s, ping_s, upstream.accepted - before)


def _assert_failed_within_bound(outcome: Outcome, served: Served, wording: str) -> None:
    target = served.target
    assert outcome.result["isError"] is True, outcome.result
    assert re.search(wording, outcome.text, re.IGNORECASE), outcome.text
    assert served.upstream.url in outcome.text, "the message names where the server looked"
    assert target.token not in outcome.text
    assert "Traceback" not in outcome.text
    assert outcome.elapsed_s < target.bound_s, (
        f"{target.name} took {outcome.elapsed_s:.1f} s; its policy allows {target.bound_s:.1f} s"
    )
    assert 1 <= outcome.connections <= target.retries + 1, f"{outcome.connections} connections for one call"


TIMED_OUT = r"timed out|did not answer within"
UNREACHABLE = r"unreachable|cannot reach"


@pytest.mark.parametrize("mode", ["stall", "stall_body"])
def test_a_stalled_upstream_fails_the_call_after_the_timeout_while_ping_is_answered(served: Served, mode: Mode) -> None:
    served.upstream.mode = mode
    for _ in range(2):  # the second call proves the first left no stuck connection or worker behind
        outcome = _call_with_ping_in_flight(served)
        _assert_failed_within_bound(outcome, served, TIMED_OUT)
        assert re.search(UNREACHABLE, outcome.text, re.IGNORECASE) is None, "it answered, slowly: " + outcome.text
        assert outcome.elapsed_s >= TIMEOUT_S, "the call gave up before the timeout: the stall did not end it"
        assert outcome.ping_s < TIMEOUT_S, "ping waited for the stalled call: the event loop was blocked"
    assert served.wire.request("ping")["result"] == {}


def test_a_reset_connection_fails_the_call_at_once_and_the_server_keeps_serving(served: Served) -> None:
    served.upstream.mode = "reset"
    for _ in range(2):
        outcome = _call_with_ping_in_flight(served)
        _assert_failed_within_bound(outcome, served, UNREACHABLE)
        assert re.search(TIMED_OUT, outcome.text) is None, "a reset is not a timeout: " + outcome.text
    assert served.wire.request("ping")["result"] == {}


def test_after_a_stall_and_a_reset_the_next_call_reaches_the_recovered_upstream(served: Served) -> None:
    for mode in ("stall", "reset"):
        served.upstream.mode = mode
        assert _call_with_ping_in_flight(served).result["isError"] is True
    served.upstream.mode = "relay"
    recovered = _call_with_ping_in_flight(served)
    assert recovered.result["isError"] is False, recovered.text
    assert recovered.result["structuredContent"], "the fake's data came through the relay"


def test_a_body_dripped_slower_than_any_answer_still_fails_within_the_bound(served: Served) -> None:
    wire, target = served.wire, served.target
    served.upstream.mode = "drip"
    call_id = next(_call_ids)
    started = time.monotonic()
    wire.send({"jsonrpc": "2.0", "id": call_id, "method": "tools/call", "params": target.call})
    answer: dict[str, Any] | None = None
    try:
        answer = wire.response_to(call_id, timeout=target.bound_s)
        elapsed = time.monotonic() - started
        assert answer["result"]["isError"] is True
        message = answer["result"]["content"][0]["text"]
        assert f"did not finish within {target.call_timeout_s:g} s" in message, message
        assert target.token not in message
        assert target.call_timeout_s <= elapsed < target.bound_s
        assert wire.request("ping")["result"] == {}
    finally:
        served.upstream.cut()  # ends the drip, so that the call in flight ends before the next test
        if answer is None:
            with contextlib.suppress(WireError):
                wire.response_to(call_id, timeout=target.bound_s)
