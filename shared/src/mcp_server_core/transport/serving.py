"""Running a server: logging on stderr (redacted), then stdio or Streamable HTTP, in one process or several.

Stopping is graceful on either transport. SIGTERM (what a supervisor, `docker stop` or systemd sends) stops
taking new requests, lets the calls in flight finish within `drain_timeout_s`, runs the server's shutdown
steps (pools closed, files flushed) and exits 0:
- stdio stops reading stdin and answers what it already read, as when stdin closes;
- HTTP stops accepting connections and lets uvicorn finish the responses it owes.
Past the drain bound the process leaves whatever still runs (a sync tool's thread cannot be cancelled). And it
leaves even when no Python code can run: a worker thread holding the GIL in a C call (a catastrophic `re` match)
starves the main thread, so no signal handler, timer or event loop gets to act. For that, a small watchdog
process waits on a pipe that faulthandler's C-level SIGTERM handler writes to (it needs no GIL); once told, it
kills the server if it is still there a few seconds past the bound. That handler writes only the stack of the
thread the signal landed in: reading another thread's frames while it runs Python can crash the process (it did,
once, on SIGTERM during a SQLite query). Every thread's stack is written to stderr on SIGUSR2, which the watchdog
sends only to a server that is stuck, just before it stops it (then no thread runs Python, and the server is
about to go anyway); an operator (or a test) may send it too, to see where a server that seems stuck waits.

`--workers N` forks N processes on one port; each builds its own server after the fork, so nothing (pools,
threads, event loops) is shared. On Linux each worker listens on its own SO_REUSEPORT socket and the kernel
spreads new connections over them evenly: on one shared socket, whichever worker woke first accepted a whole
burst (asyncio accepts up to 100 per wake-up), and 16 keep-alive sessions all landed on one worker. Elsewhere
the workers share the parent's socket. The parent only supervises: it holds the port (bound, not listening,
so it takes no connections), forwards SIGTERM / SIGINT, and replaces a worker that dies while serving.
"""

from __future__ import annotations

import asyncio
import contextlib
import faulthandler
import functools
import gc
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

import anyio
from fastmcp.server.context import reset_transport, set_transport

from mcp_server_core.conventions.errors import configure_logging
from mcp_server_core.conventions.settings import ServerSettings
from mcp_server_core.operations.audit import configure_audit_log, flush_audit_log
from mcp_server_core.operations.metrics import prepare_for_workers, remove_folder, worker_died
from mcp_server_core.operations.tracing import configure_tracing
from mcp_server_core.protocol.server import ReferenceServer
from mcp_server_core.transport.stdio import stdio_transport

__all__ = ["configure_logging", "serve", "serve_http", "serve_stdio", "serve_workers"]

logger = logging.getLogger(__name__)

RESPAWN_WINDOW_S = 10.0
"""A worker that dies sooner than this after starting is not replaced more than `MAX_QUICK_DEATHS` times:
it is the configuration (a bad URL, a port in use), and restarting it forever would hide that."""
MAX_QUICK_DEATHS = 3


EXIT_GRACE_S = 3.0
"""After the drain bound, how long shutdown steps may take before the process leaves regardless."""


def _arm_exit_deadline(seconds: float) -> None:
    """Exit 0 after `seconds` whatever still runs: a sync tool in a worker thread cannot be cancelled, and
    the interpreter would wait for it at exit (a 60 s query would hold a SIGTERM for 60 s)."""

    def leave() -> None:
        logger.warning("calls still running %.0f s after SIGTERM were cut off; exiting", seconds)
        logging.shutdown()
        os._exit(0)

    timer = threading.Timer(seconds, leave)
    timer.daemon = True
    timer.start()


WATCHDOG_GRACE_S = 2.0
"""After the exit deadline (drain bound + `EXIT_GRACE_S`), how long the watchdog waits before it kills."""
STARVED_GRACE_S = 5.0
"""Past the call deadline, how long the event loop may go without a turn before the watchdog stops the server."""

_WATCHDOG = """
import os, select, signal, sys, time
server, bound, starved = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
# A Ctrl-C or a supervisor's SIGTERM to the whole process group is for the server: this leaves when it does.
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
said, term_at, beat_at = b"", None, time.monotonic()


def threads(server):
    # Every thread's stack, asked of a stuck server: faulthandler's SIGUSR2 handler writes them to its stderr,
    # which is this process's too, at once and in C; the short wait lets it finish before what follows.
    os.kill(server, signal.SIGUSR2)
    time.sleep(0.3)


while True:
    ends = [t for t in (term_at and term_at + bound, starved and beat_at + starved) if t]
    wait = max(min(ends) - time.monotonic(), 0) if ends else None
    if select.select([0], [], [], wait)[0]:
        data = os.read(0, 1 << 16)
        if not data:
            sys.exit(0)  # the server exited: its end of the pipe closed
        text = data.replace(bytes(1), b"")
        if len(text) < len(data):
            beat_at = time.monotonic()  # a NUL byte: its event loop had a turn
        if text:  # its SIGTERM handler's traceback of the thread the signal landed in
            said = (said + text)[: 1 << 20]
            term_at = term_at or time.monotonic()
        continue
    if os.getppid() != server:  # not a process that reused its id
        sys.exit(0)
    if term_at is None:
        os.write(2, b"no turn of the event loop for %g s (a call holds the GIL past the call deadline): SIGTERM; "
                 b"its threads:\\n" % starved)
        threads(server)
        os.kill(server, signal.SIGTERM)  # its handler writes here, and the drain bound runs from now
        starved = 0
        continue
    os.write(2, b"still running %g s after SIGTERM (its threads are below); killed\\n" % bound + said)
    threads(server)
    os.kill(server, signal.SIGKILL)
    sys.exit(0)
"""


@contextlib.contextmanager
def _watchdog(bound_s: float, starved_s: float | None) -> Iterator[Callable[[], None]]:
    """A watchdog process that kills this one `bound_s` after a SIGTERM if it has not exited by then, and sends
    it SIGTERM if its event loop goes `starved_s` without a turn (a call holding the GIL in C, past the call
    deadline: then no deadline, ping or drain can happen in here). Yields the heartbeat to call on each turn.

    It needs no Python to run in here: faulthandler's C-level SIGTERM handler, armed after the serving code
    installed its own (which it chains to), tells it over a pipe, with every thread's traceback."""
    if not hasattr(faulthandler, "register"):  # pragma: no cover - Windows has no SIGTERM to watch
        yield lambda: None
        return
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)  # a signal handler must never block: a full pipe loses the traceback
    watchdog = subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", _WATCHDOG, str(os.getpid()), f"{bound_s:g}", f"{starved_s or 0:g}"],
        stdin=read_end,
        stdout=subprocess.DEVNULL,
    )
    os.close(read_end)
    # On SIGTERM only the receiving thread's stack (see the module's docstring), to the watchdog, which takes any
    # text as the news of a SIGTERM; every thread's on SIGUSR2, straight to stderr (never to the watchdog: an
    # operator's SIGUSR2 is no SIGTERM).
    faulthandler.register(signal.SIGTERM, file=write_end, all_threads=False, chain=True)
    faulthandler.register(signal.SIGUSR2, file=2, all_threads=True, chain=False)

    def beat() -> None:
        with contextlib.suppress(OSError):  # full (the watchdog reads slowly) or gone: the next beat says it
            os.write(write_end, bytes(1))

    try:
        yield beat
    finally:
        faulthandler.unregister(signal.SIGTERM)
        faulthandler.unregister(signal.SIGUSR2)
        os.close(write_end)  # the watchdog reads the end of the pipe and leaves
        with contextlib.suppress(subprocess.TimeoutExpired):
            watchdog.wait(timeout=1)


def _starved_bound(call_timeout_s: float | None) -> float | None:
    return None if call_timeout_s is None else call_timeout_s + STARVED_GRACE_S


async def _heartbeat(beat: Callable[[], None], starved_s: float | None) -> None:
    if starved_s is None:
        return
    while True:
        beat()
        await anyio.sleep(min(1.0, starved_s / 4))


async def _set_on_sigterm(stop: anyio.Event, drain_timeout: float, starved_s: float | None) -> None:
    with (
        anyio.open_signal_receiver(signal.SIGTERM) as signals,
        _watchdog(drain_timeout + EXIT_GRACE_S + WATCHDOG_GRACE_S, starved_s) as beat,
    ):
        async with anyio.create_task_group() as beating:
            beating.start_soon(_heartbeat, beat, starved_s)
            async for _ in signals:
                logger.info("SIGTERM: answering the requests in flight, then exiting")
                _arm_exit_deadline(drain_timeout + EXIT_GRACE_S)
                stop.set()
                await anyio.sleep_forever()  # the watchdog stays armed until serving ends (this task is cancelled)


async def serve_stdio(server: ReferenceServer, *, drain_timeout: float = 10.0) -> bool:
    """Serve over stdin/stdout until stdin closes or SIGTERM arrives; True when it was SIGTERM."""
    stop = anyio.Event()
    token = set_transport("stdio")
    try:
        async with anyio.create_task_group() as signals:
            signals.start_soon(_set_on_sigterm, stop, drain_timeout, _starved_bound(server.call_timeout_s))
            async with (
                server._lifespan_manager(),
                stdio_transport(stop=stop, drain_timeout=drain_timeout) as (read_stream, write_stream),
            ):
                sdk = server._mcp_server
                await sdk.run(read_stream, write_stream, sdk.create_initialization_options())
            signals.cancel_scope.cancel()
    finally:
        reset_transport(token)
    return stop.is_set()


def _draining_server_class(starved_s: float | None, end_listen_streams: Callable[[], None]) -> type[Any]:
    import uvicorn
    from sse_starlette.sse import AppStatus

    from mcp_server_core.transport.http import requests_in_flight

    # sse-starlette ends every SSE stream the moment uvicorn starts to shut down, which cuts off a tool call
    # answered on its POST's stream. The streams end below instead, once the POSTs in flight are answered.
    AppStatus.enable_automatic_graceful_drain = False  # what disable_automatic_graceful_drain() sets

    class DrainingServer(uvicorn.Server):
        """uvicorn's graceful shutdown, POSTs first, with a hard deadline behind it (`_arm_exit_deadline`)."""

        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            if not self.should_exit:
                _arm_exit_deadline((self.config.timeout_graceful_shutdown or 0) + EXIT_GRACE_S + 2)
            super().handle_exit(sig, frame)

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            # Inside uvicorn's capture_signals: its SIGTERM handler is installed, and the watchdog chains to it.
            bound = (self.config.timeout_graceful_shutdown or 0) + EXIT_GRACE_S + 2 + WATCHDOG_GRACE_S
            self._watchdog = contextlib.ExitStack()
            beat = self._watchdog.enter_context(_watchdog(bound, starved_s))
            self._beating = asyncio.ensure_future(_heartbeat(beat, starved_s))

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            try:
                await super().shutdown(sockets)
            finally:
                if hasattr(self, "_watchdog"):
                    self._beating.cancel()
                    self._watchdog.close()

        async def _wait_tasks_to_complete(self) -> None:
            # uvicorn 0.55 runs this under its graceful-shutdown timeout, after it stopped accepting.
            # 2026-07-28 listen streams are POSTs that owe nothing: ended gracefully now (the client listens again
            # elsewhere), they do not hold the drain to its bound, as they did when their client had already left.
            end_listen_streams()
            while requests_in_flight() and not self.force_exit:  # noqa: ASYNC110 - polled like uvicorn polls
                await anyio.sleep(0.05)
            AppStatus.should_exit = True  # now the standalone GET streams, which owe nothing, may end
            await super()._wait_tasks_to_complete()

    return DrainingServer


def _ignore_signal(_signum: int, _frame: FrameType | None) -> None:
    """uvicorn re-raises the signal it shut down for once it is done; this makes that a clean exit 0."""


async def serve_http(server: ReferenceServer, settings: ServerSettings, sock: socket.socket | None = None) -> None:
    """Serve Streamable HTTP on `settings.host:port`, or on `sock` (a worker's share of the parent's socket)."""
    import uvicorn

    from mcp_server_core.transport.front import MAX_HEADER_BYTES, guarded_protocol
    from mcp_server_core.transport.http import build_http_app

    app = build_http_app(server, settings)
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_config=None,  # keep configure_logging's redacted handler
        log_level=settings.log_level.lower(),
        server_header=False,
        timeout_graceful_shutdown=max(int(settings.drain_timeout_s), 1),
        # A slow or stalled client cannot hold a worker's connection slot for ever (front.py has the why).
        http=guarded_protocol(header_timeout_s=settings.header_timeout_s),
        h11_max_incomplete_event_size=MAX_HEADER_BYTES * 2,  # ours answers 431 first
        timeout_keep_alive=5,
        limit_concurrency=settings.max_connections,
    )
    uvicorn_server = _draining_server_class(_starved_bound(settings.call_timeout_s), server.changes.end_listen_streams)(
        config
    )
    for signum in (signal.SIGTERM, signal.SIGINT):
        if signal.getsignal(signum) in (signal.SIG_DFL, signal.default_int_handler):
            signal.signal(signum, _ignore_signal)
    await uvicorn_server.serve(sockets=[sock] if sock is not None else None)


def _exit_after_stdio_sigterm() -> None:
    # The thread blocked reading the still-open stdin cannot be interrupted, and the interpreter would wait
    # for it at exit: everything the server had to close is closed by now, so leave without waiting.
    logging.shutdown()
    sys.stderr.flush()
    os._exit(0)


def _apply_settings(server: ReferenceServer, settings: ServerSettings) -> None:
    server.call_timeout_s = settings.call_timeout_s
    server.max_calls_per_client = settings.max_calls_per_client
    server.max_queued_calls_per_client = settings.max_queued_calls_per_client
    server.audit.include_arguments = settings.audit_arguments
    server.flows.allow(everywhere=settings.allow_cross_writes, targets=settings.allow_writes_to)
    flush_traces = configure_tracing(server.name, server.version or "")
    if flush_traces is not None:
        server.on_shutdown(flush_traces)
    server.on_shutdown(_flush_audit_log)


async def _flush_audit_log() -> None:
    """The last calls' audit lines reach their destination before the process leaves, within a bound (audit.py)."""
    await asyncio.to_thread(flush_audit_log)


def serve(server: ReferenceServer, settings: ServerSettings, *, configured: Callable[[], None] | None = None) -> None:
    """Serve until the client leaves (stdio) or the process is stopped (HTTP, or SIGTERM on either).

    `configured` runs once the operations are set up (the tracing SDK and its exporter loaded), as serving begins:
    the command line freezes start-up's heap there (cli.py), the exporter's modules with it."""
    configure_logging(settings.log_level)
    configure_audit_log(settings.audit_log)
    _apply_settings(server, settings)
    if configured is not None:
        configured()
    if settings.transport == "http":
        anyio.run(serve_http, server, settings)
    elif anyio.run(functools.partial(serve_stdio, server, drain_timeout=settings.drain_timeout_s)):
        _exit_after_stdio_sigterm()


SPREAD_BY_KERNEL = sys.platform.startswith("linux") and hasattr(socket, "SO_REUSEPORT")
"""Linux balances connections over SO_REUSEPORT listeners; BSD and macOS give them all to one."""


def _listen(host: str, port: int, *, reuse_port: bool = False, listen: bool = True) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP spelled out: asyncio sets TCP_NODELAY only on sockets whose proto says TCP, and without it
    # Nagle's algorithm meets delayed ACKs and every response waits ~40 ms.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise ValueError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    if listen:
        sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def _run_worker(build: Callable[[], ReferenceServer], settings: ServerSettings, sock: socket.socket) -> int:
    """A forked worker's whole life: its own server, event loop and uvicorn on the parent's socket or, where
    the kernel spreads connections, on a listener of its own on the port the parent holds."""
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD):
        signal.signal(signum, signal.SIG_DFL)
    try:
        if SPREAD_BY_KERNEL:
            port = sock.getsockname()[1]
            sock.close()
            sock = _listen(settings.host, port, reuse_port=True)
        server = build()
        _apply_settings(server, settings)
        if gc.isenabled():
            # The parent froze what it loaded before the fork; this is the worker's own start-up (its server, the
            # tracing SDK), alive as long as it is: out of every later collection too (cli.py's reason).
            gc.freeze()
        anyio.run(serve_http, server, settings, sock)
    except ValueError as exc:
        print(f"worker {os.getpid()}: error: {exc}", file=sys.stderr)
        return 2
    except Exception:
        logger.exception("worker %d failed", os.getpid())
        return 1
    return 0


def serve_workers(build: Callable[[], ReferenceServer], settings: ServerSettings) -> int:
    """Serve stateless HTTP from `settings.workers` forked processes; returns the exit code for the parent."""
    if not hasattr(os, "fork"):
        raise ValueError("--workers needs os.fork (Linux, macOS); run one process per port behind the gateway")
    configure_logging(settings.log_level)
    configure_audit_log(settings.audit_log)  # inherited by the forked workers, each appending whole lines
    sock = _listen(settings.host, settings.port, listen=not SPREAD_BY_KERNEL)
    if SPREAD_BY_KERNEL:
        # Bound first without SO_REUSEPORT, so a port anyone holds (a second copy of this server included) is
        # refused rather than shared; then held with it, for the workers' listeners to join.
        port = sock.getsockname()[1]
        sock.close()
        sock = _listen(settings.host, port, reuse_port=True, listen=False)
    metrics_folder = prepare_for_workers()  # before any fork: every worker's metrics land in one folder
    workers: dict[int, float] = {}  # pid -> start time
    stopping = False
    quick_deaths = 0

    def spawn() -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                code = _run_worker(build, settings, sock)
            finally:
                logging.shutdown()
                os._exit(code)
        workers[pid] = time.monotonic()

    def forward(signum: int, _frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True
        for pid in list(workers):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    previous = {signum: signal.signal(signum, forward) for signum in (signal.SIGTERM, signal.SIGINT)}
    exit_code = 0
    try:
        for _ in range(settings.workers):
            spawn()
        logger.info("serving on %s:%d with %d workers: %s", settings.host, settings.port, len(workers), list(workers))
        while workers:
            try:
                pid, status = os.wait()
            except ChildProcessError:
                break
            except InterruptedError:  # pragma: no cover - PEP 475 retries, kept for clarity
                continue
            started = workers.pop(pid, None)
            if started is None:
                continue
            worker_died(pid)
            code = os.waitstatus_to_exitcode(status)
            if stopping:
                exit_code = exit_code or (code if code > 0 else 0)
                continue
            logger.warning("worker %d exited with %d", pid, code)
            if time.monotonic() - started < RESPAWN_WINDOW_S:
                quick_deaths += 1
                if quick_deaths >= MAX_QUICK_DEATHS or code == 2:
                    logger.error("workers keep failing at start; stopping")
                    forward(signal.SIGTERM, None)
                    exit_code = code if code > 0 else 1
                    continue
            spawn()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        sock.close()
        remove_folder(metrics_folder)
    return exit_code
