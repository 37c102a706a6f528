"""Clients that speak raw JSON-RPC to a server process, over stdio and over Streamable HTTP.

They send exactly the bytes a test gives them and keep every byte the server writes, so tests can check the
wire itself: what is on stdout, which error code came back, which notifications arrived.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import json
import os
import queue
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import httpx2
from mcp.shared.inbound import NAME_BEARING_METHODS

__all__ = ["HttpWire", "StdioWire", "WireError", "free_port", "spawn_http_server"]

LATEST_HANDSHAKE = "2025-11-25"
MODERN = "2026-07-28"
CLIENT_INFO = {"name": "mcp-server-core-wire", "version": "1"}

PATIENCE_S = float(os.environ.get("MCP_TEST_PATIENCE_S", "60"))
"""How long a wire waits for an answer the server owes. Not a guess at how fast it is: a server that dies or
closes stdout fails the wait at once, so this only bounds a server that hangs. A fresh process on a busy
2-core machine compiling its modules took over 15 s to initialize (the old fixed wait)."""

Message = dict[str, Any]


class WireError(AssertionError):
    """The server did not answer as the protocol requires (timeout, garbage on stdout, wrong id)."""


def modern_meta(version: str = MODERN) -> dict[str, Any]:
    """The per-request `_meta` envelope of the 2026-07-28 revision."""
    return {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
        "io.modelcontextprotocol/clientCapabilities": {},
    }


def with_envelope(params: Mapping[str, Any] | None, version: str = MODERN) -> dict[str, Any]:
    body = dict(params or {})
    body["_meta"] = {**modern_meta(version), **body.get("_meta", {})}
    return body


def _native_stacks(pid: int, timeout: float) -> str:
    """py-spy's view of a stuck process (a dev dependency; "" where it is missing or may not attach): unlike the
    server's own SIGUSR2 dump it marks which thread holds the GIL and shows C frames, so a process where every
    thread waits, one of them for the GIL, says which thread and which C call to blame."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(spy).exists():
        return ""
    try:
        done = subprocess.run(
            [spy, "dump", "--native", "--pid", str(pid)], capture_output=True, text=True, timeout=timeout * 2
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"py-spy: {exc}\n"
    return f"py-spy dump --native (exit {done.returncode}):\n{done.stdout[-12000:]}{done.stderr[-2000:]}\n"


class StdioWire:
    """A server subprocess on pipes; one JSON-RPC message per line each way."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        trace: Callable[[str, Message], None] | None = None,
    ) -> None:
        self.trace = trace
        """Called with ("→", message) for each message sent and ("←", message) for each one received."""
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the process; closed in __exit__
        self._stderr_text: str | None = None
        self.proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env={**os.environ, **(env or {})},
            cwd=cwd,
        )
        self.raw_lines: list[bytes] = []
        """Every line the server wrote to stdout, as written."""
        self.notifications: list[Message] = []
        self.other_responses: list[Message] = []
        """Responses to requests other than the one awaited (a late answer to a cancelled request, say)."""
        self._inbox: queue.Queue[Message | None] = queue.Queue()
        self._ids = itertools.count(1)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.raw_lines.append(line)
            try:
                message = json.loads(line)
            except ValueError:
                message = {"__not_json__": line.decode(errors="replace")}
            self._inbox.put(message)
        self._inbox.put(None)

    # --- sending ---------------------------------------------------------------------------------------------

    def send(self, message: Message | str | bytes) -> None:
        """Write one line: a dict as compact JSON, str/bytes exactly as given (a newline is added)."""
        if isinstance(message, dict):
            data = json.dumps(message, separators=(",", ":")).encode()
            if self.trace:
                self.trace("→", message)
        elif isinstance(message, str):
            data = message.encode()
        else:
            data = message
        assert self.proc.stdin is not None
        self.proc.stdin.write(data + b"\n")
        self.proc.stdin.flush()

    def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        self.send({"jsonrpc": "2.0", "method": method, **({"params": dict(params)} if params is not None else {})})

    def request(self, method: str, params: Mapping[str, Any] | None = None, *, timeout: float = PATIENCE_S) -> Message:
        """Send a request and return its response (result or error); notifications are kept aside."""
        request_id = next(self._ids)
        body: Message = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            body["params"] = dict(params)
        self.send(body)
        return self.response_to(request_id, timeout=timeout)

    def modern_request(
        self, method: str, params: Mapping[str, Any] | None = None, *, timeout: float = PATIENCE_S
    ) -> Message:
        """A 2026-07-28 request: no handshake, the envelope rides in `_meta`."""
        return self.request(method, with_envelope(params), timeout=timeout)

    def initialize(
        self,
        version: str = LATEST_HANDSHAKE,
        capabilities: Mapping[str, Any] | None = None,
        *,
        timeout: float = 2 * PATIENCE_S,
    ) -> Message:
        """The handshake; a server that starts on a busy machine compiles its modules first, so it gets twice the
        patience (still more for one that installs itself first: uv run, a bundle)."""
        response = self.request(
            "initialize",
            {"protocolVersion": version, "capabilities": dict(capabilities or {}), "clientInfo": CLIENT_INFO},
            timeout=timeout,
        )
        self.notify("notifications/initialized")
        return response

    # --- receiving -------------------------------------------------------------------------------------------

    def receive(self, timeout: float = PATIENCE_S) -> Message:
        """The next message the server sends, whatever it is."""
        try:
            message = self._inbox.get(timeout=timeout)
        except queue.Empty:
            raise WireError(f"no message within {timeout} s; stderr:\n{self.stderr[-2000:]}") from None
        if message is None:
            self._inbox.put(None)
            raise WireError(f"the server closed stdout; exit code {self.proc.poll()}; stderr:\n{self.stderr[-2000:]}")
        if "__not_json__" in message:
            raise WireError(f"the server wrote a line that is not JSON: {message['__not_json__']!r}")
        if self.trace:
            self.trace("←", message)
        return message

    def response_to(self, request_id: Any, *, timeout: float = PATIENCE_S) -> Message:
        for index, earlier in enumerate(self.other_responses):  # it came while another answer was awaited
            if earlier.get("id") == request_id:
                return self.other_responses.pop(index)
        deadline = time.monotonic() + timeout
        while True:
            message = self.receive(timeout=max(deadline - time.monotonic(), 0.01))
            if "method" in message and "id" not in message:
                self.notifications.append(message)
                continue
            if message.get("id") == request_id:
                return message
            self.other_responses.append(message)

    def wait_for_notification(self, method: str, *, timeout: float = 10.0) -> Message:
        deadline = time.monotonic() + timeout
        while True:
            for index, note in enumerate(self.notifications):
                if note.get("method") == method:
                    return self.notifications.pop(index)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WireError(f"no {method} within {timeout} s; saw {self.notifications!r}")
            with contextlib.suppress(WireError):
                message = self.receive(timeout=min(remaining, 0.2))
                if "method" in message and "id" not in message:
                    self.notifications.append(message)
                else:
                    raise WireError(f"unexpected message while waiting for {method}: {message!r}")

    # --- ending ----------------------------------------------------------------------------------------------

    @property
    def stderr(self) -> str:
        """What the server logged; still readable after the wire is closed (a test asserts on it afterwards)."""
        if self._stderr_text is not None:
            return self._stderr_text
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")

    def threads(self, timeout: float = 5.0) -> str:
        """Every thread's stack in the server, as its log now ends: for the message of a test that found the
        server stuck (the helpers' serving code writes them to stderr on SIGUSR2). Reading the frames of threads
        that run Python can crash the process, so only ask a server the test is done with."""
        if self.proc.poll() is not None:
            return self.stderr[-6000:]
        native = _native_stacks(self.proc.pid, timeout)
        before = len(self.stderr)
        self.proc.send_signal(signal.SIGUSR2)
        deadline = time.monotonic() + timeout
        while "most recent call first" not in self.stderr[before:] and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)  # the other threads' stacks follow the first one's within microseconds
        return native + self.stderr[before:][-12000:]

    def close(self, timeout: float = PATIENCE_S) -> int:
        """Close stdin (the client leaves) and return the exit code."""
        if self.proc.stdin and not self.proc.stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                self.proc.stdin.close()
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise WireError(f"the server did not exit within {timeout} s of stdin closing") from None
        # The process may exit before the reader thread has taken its last lines from the pipe; a caller
        # that reads raw_lines next must see every one of them.
        self._reader.join(timeout=timeout)
        return code

    def __enter__(self) -> StdioWire:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(WireError):
                self.close(timeout=5)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._reader.join(timeout=5)
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        if self._stderr_text is None:
            self._stderr_text = self.stderr
            self._stderr.close()


class HttpWire:
    """A Streamable HTTP client that posts raw JSON-RPC and reads JSON or SSE answers."""

    def __init__(self, url: str, *, token: str | None = None, headers: Mapping[str, str] | None = None) -> None:
        self.url = url
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self.notifications: list[Message] = []
        base = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        if token:
            base["Authorization"] = f"Bearer {token}"
        self.client = httpx2.Client(headers={**base, **(headers or {})}, timeout=30.0)
        self._ids = itertools.count(1)

    def post(self, body: Message | str | bytes, *, headers: Mapping[str, str] | None = None) -> httpx2.Response:
        """POST exactly this body; session and protocol headers are added once known."""
        extra: dict[str, str] = {}
        if self.session_id:
            extra["Mcp-Session-Id"] = self.session_id
        if self.protocol_version:
            extra["MCP-Protocol-Version"] = self.protocol_version
        content = json.dumps(body).encode() if isinstance(body, dict) else body
        if isinstance(content, str):
            content = content.encode()
        return self.client.post(self.url, content=content, headers={**extra, **(headers or {})})

    def messages(self, response: httpx2.Response) -> list[Message]:
        """The JSON-RPC messages in a response body, JSON or SSE."""
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            found = []
            for line in response.text.splitlines():
                if line.startswith("data:") and line[5:].strip():
                    found.append(json.loads(line[5:]))
            return found
        if not response.content:
            return []
        data = response.json()
        return data if isinstance(data, list) else [data]

    def request(
        self, method: str, params: Mapping[str, Any] | None = None, *, headers: Mapping[str, str] | None = None
    ) -> Message:
        request_id = next(self._ids)
        body: Message = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            body["params"] = dict(params)
        response = self.post(body, headers=headers)
        for message in self.messages(response):
            if message.get("id") == request_id:
                return message
            self.notifications.append(message)
        raise WireError(f"HTTP {response.status_code}: no response to id {request_id}: {response.text[:500]!r}")

    def modern_request(
        self, method: str, params: Mapping[str, Any] | None = None, *, headers: Mapping[str, str] | None = None
    ) -> Message:
        """A 2026-07-28 request: no session, the envelope in `_meta`, routing headers mirroring the body."""
        body = with_envelope(params)
        routing = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
        name_key = NAME_BEARING_METHODS.get(method)
        if name_key and name_key in body:
            routing["Mcp-Name"] = str(body[name_key])
        request_id = next(self._ids)
        response = self.post(
            {"jsonrpc": "2.0", "id": request_id, "method": method, "params": body},
            headers={**routing, **(headers or {})},
        )
        for message in self.messages(response):
            if message.get("id") == request_id:
                return message
            self.notifications.append(message)
        raise WireError(f"HTTP {response.status_code}: no response to id {request_id}: {response.text[:500]!r}")

    def initialize(self, version: str = LATEST_HANDSHAKE) -> Message:
        request_id = next(self._ids)
        response = self.post(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": "initialize",
                "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": CLIENT_INFO},
            }
        )
        self.session_id = response.headers.get("mcp-session-id")
        answer = next((m for m in self.messages(response) if m.get("id") == request_id), None)
        if answer is None:
            raise WireError(f"HTTP {response.status_code}: no initialize answer: {response.text[:500]!r}")
        self.protocol_version = answer.get("result", {}).get("protocolVersion")
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer

    def close(self) -> None:
        if self.session_id:
            with contextlib.suppress(httpx2.HTTPError):
                self.client.delete(self.url, headers={"Mcp-Session-Id": self.session_id})
        self.client.close()

    def __enter__(self) -> HttpWire:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_WORKER_PORTS = 2_000
"""Ports per pytest-xdist worker, below Linux's ephemeral range (32768+), so no worker's choice is another's,
nor the port the kernel gives some client's outgoing connection."""
_next_port = itertools.count(random.randrange(_WORKER_PORTS))  # noqa: S311 - spreads two runs, no secret
_PORT_CLAIMS = Path(tempfile.gettempdir()) / "mcp-server-core-test-ports"
_HELD_CLAIMS = 256
"""Claims a process keeps: by the time one is let go, the server it was for has long held its port itself."""
_claims: collections.deque[int] = collections.deque()


def _claim(port: int) -> bool:
    """Whether this process may hand out `port`: no other process on the machine holds its claim (a lock on a
    file named after it, let go when the process ends). Two suites at once (two clones, each `make test`) walk
    the same per-worker ranges: without claims each started servers on ports the other had just handed out, and
    a test talked to the other run's server, or its own server found its port taken."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - no flock (Windows): ports are only probed
        return True
    _PORT_CLAIMS.mkdir(mode=0o1777, exist_ok=True)
    fd = os.open(_PORT_CLAIMS / str(port), os.O_CREAT | os.O_RDWR, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return False
    _claims.append(fd)
    while len(_claims) > _HELD_CLAIMS:
        os.close(_claims.popleft())
    return True


def _bindable(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def free_port() -> int:
    """A port nothing listens on now and no other test process has handed out: the kernel's choice, or, under
    pytest-xdist, one from this worker's range."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if worker.startswith("gw") and worker[2:].isdigit():
        base = 20_000 + int(worker[2:]) % 6 * _WORKER_PORTS
        for _ in range(_WORKER_PORTS):
            candidate = base + next(_next_port) % _WORKER_PORTS
            if _bindable(candidate) and _claim(candidate):
                return candidate
    for _ in range(100):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port: int = probe.getsockname()[1]
        if _claim(port):
            return port
    raise RuntimeError("no free port could be claimed")


@contextlib.contextmanager
def spawn_http_server(
    argv: Sequence[str],
    *,
    port: int | None = None,
    env: Mapping[str, str] | None = None,
    ready_timeout: float = 2 * PATIENCE_S,
    log: IO[bytes] | None = None,
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """Run `argv --transport http --port P` and yield (endpoint URL, process) once the port accepts.

    The server's stdout and stderr go to `log` when given (a test reads what it logged), else to a temporary file.
    A free port is free only until someone binds it: with tests running in parallel, another worker's server can
    take it first, so a server that could not bind a port chosen here is started again on another.
    """
    owned = log is None
    log = log or tempfile.TemporaryFile()  # noqa: SIM115 - closed in the finally below
    try:
        for attempt in range(_BIND_ATTEMPTS):
            chosen = port or free_port()
            start = log.seek(0, os.SEEK_END)
            proc = subprocess.Popen(
                [*argv, "--transport", "http", "--port", str(chosen)],
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, **(env or {})},
            )
            try:
                if _wait_listening(
                    proc, chosen, ready_timeout, log, start, retry=port is None and attempt + 1 < _BIND_ATTEMPTS
                ):
                    yield f"http://127.0.0.1:{chosen}/mcp", proc
                    return
            finally:
                _stop(proc)
    finally:
        if owned:
            log.close()


_BIND_ATTEMPTS = 3


def _wait_listening(
    proc: subprocess.Popen[bytes], port: int, timeout: float, log: IO[bytes], start: int, *, retry: bool
) -> bool:
    """True once `port` accepts; False if the server lost the port to someone else and may try another."""
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            log.seek(start)
            said = log.read().decode(errors="replace")
            if retry and ("address already in use" in said.lower() or "cannot listen" in said):
                return False
            raise WireError(f"the HTTP server exited with {proc.returncode}: {said[-2000:]}")
        with socket.socket() as probe:
            # Something answers; it is ours only if ours is still running (else the loop reads why it left).
            if probe.connect_ex(("127.0.0.1", port)) == 0 and proc.poll() is None:
                return True
        if time.monotonic() > deadline:
            raise WireError(f"the HTTP server did not listen on {port} within {timeout} s")
        time.sleep(0.05)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def python_module(module: str, *args: str) -> list[str]:
    """argv that runs `python -m module args` with this interpreter."""
    return [sys.executable, "-m", module, *args]
