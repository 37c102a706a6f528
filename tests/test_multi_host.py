"""Two hosts behind nginx with Redis beside them (`--state-url`), as docs/deploy.md's multi-host recipe says.

Each test starts its own `redis-server --save ''`, two template servers (separate processes on separate ports,
the "hosts") and nginx routed as docs/deploy.md says: 2026-07-28 requests round robin (they need no affinity),
handshake-era sessions by the client's address (ip_hash). What is checked, through the real protocol:
- a client whose host dies resumes its stream with Last-Event-ID on the other and misses no event;
- one client's call limit holds across both hosts, and another client's calls are not held by it;
- a 2026-07-28 client's toolset choice is seen by that client on both hosts and announced on its listen streams on
  both, and no other client sees or hears it;
- Redis stopped mid-run: every call is still answered, and /readyz and /metrics say the host is degraded;
- a 2026-07-28 client that read one folder on one host and writes another on the other host is asked (or refused,
  when it cannot be asked), its answer holds on both hosts, and another principal's writes are not held by it.

Skipped when redis-server or nginx is missing (.ci/run installs both). tests/test_haproxy.py runs these hosts
behind deploy/haproxy.cfg instead (`_cluster(..., gateway=...)`).
"""

from __future__ import annotations

import contextlib
import json
import queue
import re
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import httpx2
import pytest
from mcp_server_core.testing import (
    NGINX,
    REDIS_SERVER,
    HttpWire,
    free_port,
    modern_meta,
    nginx,
    python_module,
    redis_server,
    spawn_http_server,
)

pytestmark = [
    pytest.mark.skipif(NGINX is None, reason="nginx is not installed (apt-get install nginx-light)"),
    pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed (apt-get install redis-server)"),
]

TOKENS = ("a" * 16 + "-first-client-token-0123456789", "b" * 16 + "-other-client-token-0123456789")
HANDSHAKE = "2025-11-25"
MODERN = "2026-07-28"
WAIT_S = 20.0
"""The longest any readiness wait below takes before it fails (it normally ends within a second)."""


@dataclass
class Cluster:
    folder: Path
    redis_port: int
    redis: subprocess.Popen[bytes]
    hosts: list[str]
    processes: list[subprocess.Popen[bytes]]
    logs: list[IO[bytes]]
    gateway: str

    def log(self, host: int) -> str:
        self.logs[host].seek(0)
        return self.logs[host].read().decode(errors="replace")


def _wait_for(condition: Any, failure: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(failure)
        time.sleep(0.05)


ROUTING = """
    # 2026-07-28 requests carry no session: any host serves them (round robin). Handshake-era requests belong to
    # a session that lives on one host: the client's address picks it (ip_hash), and if it died, the next one.
    map $http_mcp_protocol_version $mcp_upstream {{
        "2026-07-28" mcp_any;
        default      mcp_sticky;
    }}
    upstream mcp_any {{
        server {first};
        server {second};
        keepalive 16;
    }}
    upstream mcp_sticky {{
        ip_hash;
        server {first};
        server {second};
    }}
"""
"""docs/deploy.md's multi-host routing, with the two hosts' addresses filled in."""
LOCATION = """
    location /mcp {
        proxy_pass http://$mcp_upstream/mcp;
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_set_header Host $host;
        proxy_buffering off;
        proxy_read_timeout 300s;
        proxy_next_upstream error timeout;
    }
"""
"""docs/deploy.md's multi-host `location /mcp` block."""


@contextlib.contextmanager
def nginx_gateway(folder: Path, first: int, second: int) -> Iterator[str]:
    """nginx routing to the hosts on ports `first` and `second` as docs/deploy.md says: its /mcp URL."""
    routing = ROUTING.format(first=f"127.0.0.1:{first}", second=f"127.0.0.1:{second}")
    with nginx(LOCATION, http=routing, folder=folder) as base:
        yield f"{base}/mcp"


Gateway = Callable[[Path, int, int], contextlib.AbstractContextManager[str]]
"""Starts a gateway in a folder of its own in front of the hosts on two ports, and gives its /mcp URL."""


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    """Hosts of one test's own, which it may kill or cut off from Redis."""
    with _cluster(tmp_path) as started:
        yield started


@pytest.fixture(scope="module")
def steady_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """Hosts the tests that harm none of them share (each uses its own tools and clients' state)."""
    with _cluster(tmp_path_factory.mktemp("steady")) as started:
        yield started


@contextlib.contextmanager
def _cluster(tmp_path: Path, gateway: Gateway = nginx_gateway) -> Iterator[Cluster]:
    tokens = tmp_path / "tokens"
    tokens.write_text("\n".join(TOKENS) + "\n")
    redis_port = free_port()
    with contextlib.ExitStack() as stack:
        redis = stack.enter_context(redis_server(redis_port))
        starting = []
        for host in range(2):
            log = stack.enter_context(tempfile.TemporaryFile())
            argv = python_module(
                "mcp_server_template",
                "--notes-dir",
                str(tmp_path / f"notes-{host}"),
                "--conformance",
                "--toolsets",
                "conformance,dynamic",
                "--resumable",
                "--sse-retry-ms",
                "100",
                "--state-url",
                f"redis://127.0.0.1:{redis_port}/0",
                "--auth-token-file",
                str(tokens),
                "--max-calls-per-client",
                "1",
                "--max-queued-calls-per-client",
                "0",
                "--max-sessions-per-client",
                "2",
                "--log-level",
                "INFO",
            )
            starting.append((spawn_http_server(argv, log=log), log))
        # Both hosts start at once: each takes seconds to import and listen on a busy machine.
        with ThreadPoolExecutor(2) as pool:
            started = [pool.submit(server.__enter__) for server, _ in starting]
            for (server, _), future in zip(starting, started, strict=True):
                with contextlib.suppress(Exception):
                    future.result()
                    stack.push(server.__exit__)
        (first, first_process), (second, second_process) = (future.result() for future in started)
        hosts, processes, logs = [first, second], [first_process, second_process], [log for _, log in starting]
        url = stack.enter_context(gateway(tmp_path / "gateway", *(_port(url) for url in hosts)))
        yield Cluster(tmp_path, redis_port, redis, hosts, processes, logs, url)


def _port(url: str) -> int:
    return int(url.split(":")[2].split("/")[0])


# --- the 2026-07-28 era: no session, any host ------------------------------------------------------------------


def _modern(url: str, token: str, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    with HttpWire(url, token=token) as wire:
        return wire.modern_request(method, params)


def _tool_names(url: str, token: str) -> set[str]:
    return {tool["name"] for tool in _modern(url, token, "tools/list")["result"]["tools"]}


class ListenStream:
    """A 2026-07-28 `subscriptions/listen` stream read on a thread: its notifications arrive in `received`."""

    def __init__(self, url: str, token: str) -> None:
        self.received: queue.Queue[dict[str, Any]] = queue.Queue()
        self._client = httpx2.Client(timeout=httpx2.Timeout(30.0, read=None))
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "subscriptions/listen",
            "params": {"notifications": {"toolsListChanged": True}, "_meta": modern_meta()},
        }
        headers = {
            "Authorization": f"Bearer {token}",
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "MCP-Protocol-Version": MODERN,
            "Mcp-Method": "subscriptions/listen",
        }
        self._request = self._client.build_request("POST", url, json=body, headers=headers)
        self._response: httpx2.Response | None = None
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()
        acknowledged = self.next(WAIT_S)
        assert acknowledged["method"] == "notifications/subscriptions/acknowledged", acknowledged

    def _read(self) -> None:
        with contextlib.suppress(httpx2.HTTPError):
            response = self._response = self._client.send(self._request, stream=True)
            for line in response.iter_lines():
                if line.startswith("data:") and line[5:].strip():
                    self.received.put(json.loads(line[5:]))

    def next(self, timeout: float) -> dict[str, Any]:
        try:
            return self.received.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"nothing arrived on the listen stream within {timeout} s") from None

    def close(self) -> None:
        if self._response is not None:
            self._response.close()  # the server sees the stream end, and a stopping host need not wait for it
        self._client.close()


def test_a_toolset_choice_is_the_principal_s_on_every_host_and_announced_to_it_alone(steady_cluster: Cluster) -> None:
    cluster = steady_cluster
    mine, theirs = TOKENS
    notes_tools = {"list_notes", "read_note"}
    before = _tool_names(cluster.hosts[0], mine)
    assert not notes_tools & before, before
    streams = [ListenStream(cluster.hosts[0], mine), ListenStream(cluster.hosts[1], mine)]
    other = ListenStream(cluster.hosts[1], theirs)
    try:
        answer = _modern(
            cluster.gateway, mine, "tools/call", {"name": "enable_toolset", "arguments": {"name": "notes"}}
        )
        assert answer["result"]["isError"] is False, answer
        for host in cluster.hosts:
            assert notes_tools <= _tool_names(host, mine), f"{host} does not serve the choice"
            assert not notes_tools & _tool_names(host, theirs), f"{host} serves one principal's choice to another"
        for stream in streams:  # announced on both hosts, on the chooser's streams
            assert stream.next(WAIT_S)["method"] == "notifications/tools/list_changed"
        # The other principal's first announcement is its own choice's, not the one before it.
        answer = _modern(
            cluster.gateway, theirs, "tools/call", {"name": "enable_toolset", "arguments": {"name": "notes"}}
        )
        assert answer["result"]["isError"] is False, answer
        assert other.next(WAIT_S)["method"] == "notifications/tools/list_changed"
        assert other.received.empty(), "the other principal heard the first principal's choice too"
        assert all(s.received.empty() for s in streams), "the first principal heard the other's choice"
    finally:
        for stream in [*streams, other]:
            stream.close()


# --- call limits across hosts ------------------------------------------------------------------------------


def _post_stream(client: httpx2.Client, url: str, body: dict[str, Any], session: dict[str, str]) -> Any:
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json", **session}
    return client.stream("POST", url, json=body, headers=headers)


def _post_initialize(client: httpx2.Client, url: str, capabilities: dict[str, Any]) -> httpx2.Response:
    return client.post(
        url,
        headers={"Accept": "application/json, text/event-stream", "Content-Type": "application/json"},
        json={
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": HANDSHAKE,
                "capabilities": capabilities,
                "clientInfo": {"name": "t", "version": "1"},
            },
        },
    )


def _initialize(client: httpx2.Client, url: str, token: str, capabilities: dict[str, Any]) -> dict[str, str]:
    response = _post_initialize(client, url, capabilities)
    assert response.status_code == 200, response.text
    session = {"Mcp-Session-Id": response.headers["mcp-session-id"], "MCP-Protocol-Version": HANDSHAKE}
    notified = client.post(
        url,
        headers={"Accept": "application/json, text/event-stream", "Content-Type": "application/json", **session},
        json={"jsonrpc": "2.0", "method": "notifications/initialized"},
    )
    assert notified.status_code == 202, notified.text
    return session


def _events(lines: Iterator[str]) -> Iterator[dict[str, str]]:
    """SSE events (field -> value) as they arrive."""
    event: dict[str, str] = {}
    for line in lines:
        if not line:
            if event:
                yield event
            event = {}
            continue
        name, _, value = line.partition(":")
        event[name] = value.removeprefix(" ")


def _simple_call(url: str, token: str) -> dict[str, Any]:
    return _modern(url, token, "tools/call", {"name": "test_simple_text", "arguments": {}})["result"]


def test_one_client_s_call_limit_holds_across_hosts(steady_cluster: Cluster) -> None:
    cluster = steady_cluster
    mine, theirs = TOKENS
    with httpx2.Client(timeout=30, headers={"Authorization": f"Bearer {mine}"}) as client:
        session = _initialize(client, cluster.hosts[0], mine, {"elicitation": {}})
        call = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "test_elicitation", "arguments": {"message": "hold"}},
        }
        with _post_stream(client, cluster.hosts[0], call, session) as held:
            events = _events(held.iter_lines())
            asking = next(e for e in events if '"elicitation/create"' in e.get("data", ""))
            # Its one call runs on the first host: on the second, the same client is refused at once (its queue is
            # 0), through the gateway on either host, while another client is answered.
            refused = _simple_call(cluster.hosts[1], mine)
            assert refused["isError"] is True, refused
            assert "Too many calls" in refused["content"][0]["text"], refused
            for _ in range(2):
                assert _simple_call(cluster.gateway, mine)["isError"] is True
            assert _simple_call(cluster.hosts[1], theirs)["isError"] is False
            request_id = json.loads(asking["data"])["id"]
            answered = client.post(
                cluster.hosts[0],
                headers={
                    "Accept": "application/json, text/event-stream",
                    "Content-Type": "application/json",
                    **session,
                },
                json={"jsonrpc": "2.0", "id": request_id, "result": {"action": "decline"}},
            )
            assert answered.status_code == 202, answered.text
            result = next(e for e in events if '"id":7' in e.get("data", "").replace(" ", ""))
            assert "result" in json.loads(result["data"]), result
    # The call is over: its lease went back, and the second host answers the client.
    assert _simple_call(cluster.hosts[1], mine)["isError"] is False


def test_one_client_s_session_limit_holds_across_hosts(steady_cluster: Cluster) -> None:
    cluster = steady_cluster
    token = TOKENS[1]
    with httpx2.Client(timeout=30, headers={"Authorization": f"Bearer {token}"}) as client:
        first = _initialize(client, cluster.hosts[0], token, {})
        _initialize(client, cluster.hosts[0], token, {})
        refused = _post_initialize(client, cluster.hosts[1], {})
        assert refused.status_code == 429, refused.text
        assert "Too many sessions" in refused.text
        # One ended (DELETE, on its host): the other host opens one again.
        assert client.delete(cluster.hosts[0], headers=first).status_code == 200
        _initialize(client, cluster.hosts[1], token, {})


# --- resumable streams survive their host --------------------------------------------------------------------


def _holder(cluster: Cluster, session: dict[str, str], token: str) -> int:
    """Which host holds the session (the gateway chose by the client's address)."""
    for index, host in enumerate(cluster.hosts):
        response = httpx2.post(
            host,
            headers={
                "Authorization": f"Bearer {token}",
                "Accept": "application/json, text/event-stream",
                "Content-Type": "application/json",
                **session,
            },
            json={"jsonrpc": "2.0", "id": 99, "method": "ping"},
        )
        if response.status_code == 200:
            return index
    raise AssertionError("no host holds the session")


def _replay(url: str, token: str, session: dict[str, str], last_event_id: str) -> list[dict[str, Any]]:
    """The messages a GET with Last-Event-ID brings back, until the call's answer (or the stream's end)."""
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "text/event-stream",
        **session,
        "Last-Event-ID": last_event_id,
    }
    found: list[dict[str, Any]] = []
    with httpx2.Client(timeout=httpx2.Timeout(10.0)) as client, client.stream("GET", url, headers=headers) as response:
        assert response.status_code == 200, response.read()
        for event in _events(response.iter_lines()):
            if event.get("data", "").startswith("{"):
                found.append(json.loads(event["data"]))
                if found[-1].get("id") == 5:
                    break
    return found


def test_a_stream_resumes_on_the_other_host_when_its_host_dies(cluster: Cluster) -> None:
    resume_after_its_host_dies(cluster)


def resume_after_its_host_dies(cluster: Cluster) -> None:
    """A client's stream drops after its first event; its host dies once the call is answered; the client resumes
    through the gateway (which can only send it to the other host) and gets every event; another credential gets
    404. Every gateway's test runs it."""
    token = TOKENS[0]
    with httpx2.Client(timeout=30, headers={"Authorization": f"Bearer {token}"}) as client:
        session = _initialize(client, cluster.gateway, token, {})
        holder = _holder(cluster, session, token)
        call = {
            "jsonrpc": "2.0",
            "id": 5,
            "method": "tools/call",
            "params": {"name": "test_tool_with_progress", "arguments": {}, "_meta": {"progressToken": "p"}},
        }
        seen: list[dict[str, Any]] = []
        last_id = ""
        with _post_stream(client, cluster.gateway, call, session) as stream:
            for event in _events(stream.iter_lines()):
                last_id = event.get("id", last_id)
                if event.get("data", "").startswith("{"):
                    seen.append(json.loads(event["data"]))
                    break  # the first progress report: then the client's connection drops
    assert [m["params"]["progress"] for m in seen] == [0], seen

    # The call goes on without the client; once its answer is in the store, its host dies.
    def answered_on_its_host() -> bool:
        return any(m.get("id") == 5 for m in _replay(cluster.hosts[holder], token, session, last_id))

    _wait_for(answered_on_its_host, "the call was never answered on its host")
    # Another client has a session on the same host, which dies with it too.
    with httpx2.Client(timeout=30, headers={"Authorization": f"Bearer {TOKENS[1]}"}) as other:
        strangers_session = _initialize(other, cluster.hosts[holder], TOKENS[1], {})
    cluster.processes[holder].send_signal(signal.SIGKILL)
    cluster.processes[holder].wait(timeout=10)

    # The client comes back through the gateway, which can only send it to the other host.
    resumed = _replay(cluster.gateway, token, session, last_id)
    progress = [m["params"]["progress"] for m in [*seen, *resumed] if m.get("method") == "notifications/progress"]
    assert progress == [0, 50, 100], resumed
    answer = resumed[-1]
    assert answer.get("id") == 5, resumed
    assert answer["result"]["isError"] is False, resumed
    assert "replayed" in cluster.log(1 - holder)
    # Another credential may not read those events, naming their session or its own.
    with httpx2.Client(timeout=10, headers={"Authorization": f"Bearer {TOKENS[1]}"}) as stranger:
        for named in (session, strangers_session):
            headers = {"Accept": "text/event-stream", **named, "Last-Event-ID": last_id}
            refused = stranger.get(cluster.gateway, headers=headers)
            assert refused.status_code == 404, refused.text


# --- Redis away ---------------------------------------------------------------------------------------------


def test_calls_are_answered_while_redis_is_away_and_the_hosts_say_so(cluster: Cluster) -> None:
    token = TOKENS[0]
    assert _simple_call(cluster.gateway, token)["isError"] is False
    for host in cluster.hosts:
        ready = httpx2.get(host.replace("/mcp", "/readyz")).json()
        assert ready == {"status": "ready", "state": "redis"}, ready
    cluster.redis.terminate()
    cluster.redis.wait(timeout=10)

    for _ in range(6):  # every call answered, on both hosts
        assert _simple_call(cluster.gateway, token)["isError"] is False
    tools = _tool_names(cluster.gateway, token)
    assert "enable_toolset" in tools
    for index, host in enumerate(cluster.hosts):
        ready = httpx2.get(host.replace("/mcp", "/readyz")).json()
        assert ready["status"] == "ready", ready
        assert ready["state"].startswith("degraded"), ready
        metrics = httpx2.get(host.replace("/mcp", "/metrics"), headers={"Authorization": f"Bearer {token}"}).text
        assert re.search(r"^mcp_state_store_up 0\.0$", metrics, re.MULTILINE), metrics[:2000]
        said = cluster.log(index)
        assert re.search(r"state store redis://127\.0\.0\.1:\d+/0 unreachable", said), said[-3000:]

    # Back again: the hosts notice (readiness probes try it), and say so.
    with redis_server(cluster.redis_port):

        def shared_again() -> bool:
            return all(
                httpx2.get(host.replace("/mcp", "/readyz")).json().get("state") == "redis" for host in cluster.hosts
            )

        _wait_for(shared_again, "the hosts did not notice Redis came back")
        assert _simple_call(cluster.gateway, token)["isError"] is False


# --- the same model on one host, without a state store -----------------------------------------------------------


def test_one_host_without_a_state_store_keeps_choices_per_principal_and_announces_them(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("\n".join(TOKENS) + "\n")
    mine, theirs = TOKENS
    notes = str(tmp_path / "notes")
    argv = python_module("mcp_server_template", "--notes-dir", notes, "--toolsets", "dynamic", "--auth-token-file")
    argv.append(str(tokens))
    with spawn_http_server(argv) as (url, _process):
        own, other = ListenStream(url, mine), ListenStream(url, theirs)
        try:
            answer = _modern(url, mine, "tools/call", {"name": "enable_toolset", "arguments": {"name": "notes"}})
            assert answer["result"]["isError"] is False, answer
            assert own.next(WAIT_S)["method"] == "notifications/tools/list_changed"
            assert "list_notes" in _tool_names(url, mine)
            assert "list_notes" not in _tool_names(url, theirs)
            assert other.received.empty(), "another principal heard the choice"
        finally:
            own.close()
            other.close()


# --- cross writes: one principal's history on every host --------------------------------------------------------


def _modern_call(url: str, token: str, params: dict[str, Any], *, can_ask: bool = False) -> dict[str, Any]:
    with HttpWire(url, token=token) as wire:
        if can_ask:
            meta = modern_meta()
            meta["io.modelcontextprotocol/clientCapabilities"] = {"elicitation": {}}
            params = {**params, "_meta": meta}
        answer: dict[str, Any] = wire.modern_request("tools/call", params)["result"]
        return answer


def test_a_read_on_one_host_makes_a_write_on_the_other_ask(tmp_path: Path) -> None:
    """The filesystem server on two hosts sharing Redis, two roots each: what a 2026-07-28 principal (no session,
    any host) read on the first host is its history on the second, so the cross write is put to its user there."""
    private, public = tmp_path / "private", tmp_path / "public"
    private.mkdir()
    public.mkdir()
    (private / "keys.txt").write_text("API_KEY=hunter2\n")
    tokens = tmp_path / "tokens"
    tokens.write_text("\n".join(TOKENS) + "\n")
    mine, theirs = TOKENS
    with contextlib.ExitStack() as stack:
        redis_port = free_port()
        redis = stack.enter_context(redis_server(redis_port))
        argv = python_module(
            "mcp_server_filesystem",
            str(private.resolve()),
            str(public.resolve()),
            "--no-watch",
            "--state-url",
            f"redis://127.0.0.1:{redis_port}/0",
            "--auth-token-file",
            str(tokens),
        )
        starting = [spawn_http_server(argv), spawn_http_server(argv)]
        with ThreadPoolExecutor(2) as pool:  # both at once: each takes seconds to start on a busy machine
            started = [pool.submit(server.__enter__) for server in starting]
            for server, future in zip(starting, started, strict=True):
                with contextlib.suppress(Exception):
                    future.result()
                    stack.push(server.__exit__)
        first, second = (future.result()[0] for future in started)

        def write(host: str, token: str, name: str, *, can_ask: bool = False) -> dict[str, Any]:
            arguments = {"path": str(public / name), "content": "x"}
            return _modern_call(host, token, {"name": "write_file", "arguments": arguments}, can_ask=can_ask)

        read = _modern_call(first, mine, {"name": "read_file", "arguments": {"path": str(private / "keys.txt")}})
        assert read["isError"] is False, read

        # A client that cannot be asked is refused on the other host, and nothing is written.
        refused = write(second, mine, "leak.txt")
        assert refused["isError"] is True, refused
        assert f"after this session read folder {private.resolve()}" in refused["content"][0]["text"], refused
        assert not (public / "leak.txt").exists()
        # Another principal read nothing: its write is not held by the first one's history.
        assert write(second, theirs, "theirs.txt")["isError"] is False
        assert (public / "theirs.txt").read_text() == "x"

        # One that can be asked gets the question; its answer, which the gateway may send to the other host (the
        # request state is sealed with a key the hosts share), lets the write go on.
        question = write(second, mine, "confirmed.txt", can_ask=True)
        assert question.get("resultType") == "input_required", question
        [(ask_key, ask)] = question["inputRequests"].items()
        assert f"folder {private.resolve()}" in ask["params"]["message"], ask
        assert not (public / "confirmed.txt").exists()
        answered = _modern_call(
            first,
            mine,
            {
                "name": "write_file",
                "arguments": {"path": str(public / "confirmed.txt"), "content": "x"},
                "inputResponses": {ask_key: {"action": "accept", "content": {"value": True}}},
                "requestState": question["requestState"],
            },
            can_ask=True,
        )
        assert answered["isError"] is False, answered
        assert (public / "confirmed.txt").read_text() == "x"
        # The confirmation is the principal's on every host: neither asks again.
        assert write(second, mine, "again.txt")["isError"] is False
        assert (public / "again.txt").read_text() == "x"

        # Redis away: what the other principal read elsewhere cannot be known, so its write asks (here: is refused,
        # this client cannot be asked) where it went on unasked before. An outage never lets a write through.
        redis.terminate()
        redis.wait(timeout=10)
        during = write(second, theirs, "during.txt")
        assert during["isError"] is True, during
        assert "cannot ask its user to confirm" in during["content"][0]["text"], during
        assert not (public / "during.txt").exists()
