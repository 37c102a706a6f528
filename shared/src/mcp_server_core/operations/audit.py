"""The audit trail: one JSON line per tool call, resource read and prompt get, to a destination of its own.

An operator hands these lines to a security team: who called what, with what outcome, how long it took and how
much it returned. The format is documented by a JSON Schema (docs/audit.schema.json) that the tests validate
every line against. What the lines never hold:
- a secret: a static token appears as its fingerprint (the principal), never itself; the arguments appear as
  a digest of their canonical JSON, and themselves only with `--audit-arguments`, redacted like every error;
- a traceback: the outcome class says which side failed, the server log says why.

The trail is an SDK middleware, the outermost layer, so it sees what the client saw: the isError result, the
protocol error and its code, the call abandoned at its deadline. What only the inner layers know (the failure's
category, a write's target) they put in the call's `AuditNote` (`note_failure`, `audit_target`), which worker
threads reach because they run in a copy of the call's context that shares the note.

Off the request path: a call hands its line's raw facts (plain values, no live objects) to a bounded queue and
goes on; one writer thread per process formats them (redaction included) and appends them to the destination in
a few writes. When the destination stops taking writes (a full disk, a stderr nobody reads) the queue fills and
further lines are dropped and counted (`mcp_audit_dropped_total` in /metrics, one warning per burst), never waited
for. At shutdown what is queued is written within `FLUSH_TIMEOUT_S`. Measured in bench/results-http.md.
"""

from __future__ import annotations

import asyncio
import atexit
import hashlib
import json
import logging
import os
import select
import sys
import threading
import time
from collections import deque
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from mcp_server_core.auth.identity import caller
from mcp_server_core.conventions.errors import redact

if TYPE_CHECKING:
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
    from mcp.shared.exceptions import MCPError

if TYPE_CHECKING:
    from mcp_server_core.operations.metrics import CallMetrics

__all__ = [
    "AUDIT_LOGGER",
    "AuditTrail",
    "audit_acting_as",
    "audit_confirmation",
    "audit_target",
    "configure_audit_log",
    "flush_audit_log",
    "note_failure",
]

AUDIT_LOGGER = "mcp_server_core.operations.audit"
"""The logger of the trail's own troubles (lines dropped, a destination that failed), in the human log; the audit
lines themselves go to their own destination through the writer, never through logging."""
AUDITED = {"tools/call": "name", "resources/read": "uri", "prompts/get": "name"}
"""The methods audited, and the param that names what they act on."""
_MAX_ARGUMENT_CHARS = 4_000

MAX_QUEUED_LINES = 1_000
"""Lines waiting for the writer. It writes thousands a second, so only a destination that stopped taking writes
fills this; about three seconds of calls at the rates bench/results-http.md measures."""
MAX_QUEUED_CHARS = 8 * 1024 * 1024
"""Characters of client-chosen text (names, URIs, arguments) held by queued lines: a line's facts are kept raw
until the writer redacts them, so their size is bounded as well as their number."""
FLUSH_TIMEOUT_S = 2.0
"""How long shutdown waits for queued lines to reach a destination that is slow to take them."""
_LINGER_S = 0.1
"""The writer waits this long after the first line of a batch: the call that queued it is still sending its
answer, and a batch costs one wake-up however many lines it holds (each wake-up takes the interpreter lock from
the event loop at a moment of the kernel's choosing)."""
_MAX_BATCH_LINES = 512
_LINES_PER_WRITE = 16
"""Lines formatted between two writes: each write lets go of the interpreter lock, so the event loop never waits
behind more than this many lines' formatting."""
_CHUNK_BYTES = select.PIPE_BUF
"""Bytes per write: whole lines, at most a pipe's atomic write, so lines on stderr never interleave with the
human log's, and `--workers` appending to one file never interleave with each other."""

logger = logging.getLogger(AUDIT_LOGGER)


@dataclass
class AuditNote:
    """What the inner layers learned about one call, for its audit line."""

    category: str | None = None
    timed_out: bool = False
    targets: list[str] = field(default_factory=list)
    acting_as: str | None = None
    confirmation: str | None = None


_note: ContextVar[AuditNote | None] = ContextVar("mcp_server_core_audit_note", default=None)


def audit_target(target: str) -> None:
    """Name what a write changes (a file path, a table, a repository, a channel) in its call's audit line."""
    note = _note.get()
    if note is not None and target not in note.targets:
        note.targets.append(target)


def audit_acting_as(identity: str) -> None:
    """Name who the call acted as upstream, beside its principal (the database role a caller is mapped to)."""
    note = _note.get()
    if note is not None:
        note.acting_as = identity


def audit_confirmation(outcome: str) -> None:
    """Name how the user answered a cross write's confirmation (accepted, declined, cancelled, timed_out,
    refused_no_elicitation: protocol/flows.py) in its call's audit line."""
    note = _note.get()
    if note is not None:
        note.confirmation = outcome


def note_failure(category: str | None = None, *, timed_out: bool = False) -> None:
    """The helpers record why a call failed: a `ToolFailure`'s category, or the call deadline."""
    note = _note.get()
    if note is None:
        return
    if category is not None:
        note.category = category
    note.timed_out = note.timed_out or timed_out


def configure_audit_log(destination: str | None, *, max_queued_lines: int = MAX_QUEUED_LINES) -> None:
    """Send audit lines to `destination`: "stderr", a file path (reopened when logrotate moves it), or nowhere.

    A file that cannot be opened fails here, at start-up. What was queued for the previous destination is
    written to it first (within `FLUSH_TIMEOUT_S`)."""
    global _writer
    previous, _writer = _writer, None
    if previous is not None:
        previous.close(FLUSH_TIMEOUT_S)
    if destination:
        _writer = _Writer(_Destination(destination), max_queued_lines)


def flush_audit_log(timeout_s: float = FLUSH_TIMEOUT_S) -> bool:
    """Write what is queued, waiting at most `timeout_s`; False if lines were still waiting (a stuck destination).
    Called at shutdown (the server's last step, and at exit): a call never waits for its line."""
    writer = _writer
    return writer.flush(timeout_s) if writer is not None else True


class AuditTrail:
    """The SDK middleware that writes one audit line per audited request; see the module docstring."""

    def __init__(self, server: str, version: str, *, include_arguments: bool = False) -> None:
        self.server = server
        self.version = version
        self.include_arguments = include_arguments
        self.metrics: CallMetrics | None = None
        """Counts the same outcomes for Prometheus, once the HTTP transport turns metrics on."""

    async def record(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        # The SDK is imported here, not with the module: tools name their audit targets on the command-line
        # track too, which never loads the SDK.
        from mcp.shared.exceptions import MCPError

        subject_key = AUDITED.get(ctx.method)
        writer = _writer
        writing = writer is not None
        metrics = self.metrics
        if subject_key is None or not (writing or metrics):
            try:
                return await call_next(ctx)
            except MCPError as exc:  # the log says which side failed, audited or not
                _log_protocol_error(ctx, exc)
                raise
        note = AuditNote()
        token = _note.set(note)
        started = time.perf_counter()
        if metrics is not None:
            metrics.started(ctx.method)
        outcome, code, result = "ok", None, None
        try:
            result = await call_next(ctx)
            if _is_error(result):
                outcome = "timeout" if note.timed_out else "refused" if note.category == "refused" else "tool_error"
            return result
        except MCPError as exc:
            outcome, code = "protocol_error", exc.error.code
            _log_protocol_error(ctx, exc)
            raise
        except asyncio.CancelledError:
            outcome = "cancelled"
            raise
        except Exception:
            outcome, code = "protocol_error", -32603
            raise
        finally:
            _note.reset(token)
            seconds = time.perf_counter() - started
            try:
                if metrics is not None:
                    subject = str((ctx.params or {}).get(subject_key, ""))
                    metrics.finished(
                        ctx.method, subject, outcome, note.category, seconds, principal=_principal(caller())
                    )
                if writer is not None:
                    writer.put(self._facts(ctx, subject_key, note, outcome, code, result, seconds))
            except Exception:  # the trail must never break the call it records
                logger.exception("could not queue an audit line")

    def _facts(
        self,
        ctx: ServerRequestContext[Any, Any],
        subject_key: str,
        note: AuditNote,
        outcome: str,
        code: int | None,
        result: HandlerResult,
        seconds: float,
    ) -> _Facts:
        """What only the request path can know, as plain values: its context (who, which session) and the
        objects that die with the call (the arguments, the result) reduced to what the line keeps of them."""
        params = ctx.params or {}
        arguments = params.get("arguments") or {}
        canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=str)
        return _Facts(
            wall=time.time(),
            server=self.server,
            version=self.version,
            principal=caller(),
            client=_client(ctx, params),
            protocol_version=ctx.protocol_version,
            transport=_transport(),
            session=_session(ctx),
            method=ctx.method,
            subject_key=subject_key,
            subject=str(params.get(subject_key, "")),
            digest=hashlib.sha256(canonical.encode()).hexdigest()[:32],
            outcome=outcome,
            seconds=seconds,
            size=_size(result),
            code=code,
            category=note.category if outcome in ("tool_error", "refused") else None,
            targets=list(note.targets),
            arguments=canonical[:_MAX_ARGUMENT_CHARS] if self.include_arguments else None,
            acting_as=note.acting_as,
            confirmation=note.confirmation,
        )


@dataclass(slots=True)
class _Facts:
    """One call's audit line before formatting. Client-chosen text is still raw here: the writer redacts it."""

    wall: float
    server: str
    version: str
    principal: str
    client: tuple[str, str] | None
    protocol_version: str | None
    transport: str
    session: str | None
    method: str
    subject_key: str
    subject: str
    digest: str
    outcome: str
    seconds: float
    size: int
    code: int | None
    category: str | None
    targets: list[str]
    arguments: str | None
    acting_as: str | None
    confirmation: str | None

    def weight(self) -> int:
        """Characters held, for MAX_QUEUED_CHARS."""
        client = len(self.client[0]) + len(self.client[1]) if self.client else 0
        arguments = len(self.arguments) if self.arguments else 0
        return (
            len(self.principal)
            + len(self.subject)
            + client
            + arguments
            + sum(map(len, self.targets))
            + len(self.acting_as or "")
        )


def _line(facts: _Facts) -> str:
    """The audit line (docs/audit.schema.json): formatted and redacted by the writer, off the request path."""
    client = None
    if facts.client is not None:
        client = {"name": redact(facts.client[0])[:200], "version": redact(facts.client[1])[:100]}
    line: dict[str, Any] = {
        "time": datetime.fromtimestamp(facts.wall, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "server": facts.server,
        "version": facts.version,
        "principal": _principal(facts.principal),
        "client": client,
        "protocol_version": facts.protocol_version,
        "transport": facts.transport,
        "session": facts.session,
        "method": facts.method,
        facts.subject_key: redact(facts.subject),
        "arguments_digest": facts.digest,
        "outcome": facts.outcome,
        "duration_ms": round(facts.seconds * 1000, 3),
        "bytes": facts.size,
    }
    if facts.code is not None:
        line["code"] = facts.code
    if facts.category is not None:
        line["category"] = facts.category
    if facts.targets:
        line["targets"] = facts.targets
    if facts.acting_as is not None:
        line["acting_as"] = redact(facts.acting_as)
    if facts.confirmation is not None:
        line["cross_write_confirmation"] = facts.confirmation
    if facts.arguments is not None:
        line["arguments"] = redact(facts.arguments)
    return json.dumps(line, separators=(",", ":"), ensure_ascii=False)


def _log_protocol_error(ctx: ServerRequestContext[Any, Any], exc: MCPError) -> None:
    logging.getLogger("mcp_server_core.protocol.server").info(
        "[protocol error %d] %s: %s", exc.error.code, ctx.method, exc
    )


def _is_error(result: HandlerResult) -> bool:
    if isinstance(result, dict):
        return bool(result.get("isError"))
    return bool(getattr(result, "is_error", False))


def _size(result: HandlerResult) -> int:
    if result is None:
        return 0
    if isinstance(result, dict):
        return len(json.dumps(result, separators=(",", ":"), default=str).encode())
    return len(result.model_dump_json(by_alias=True, exclude_none=True).encode())


def _principal(who: str) -> str:
    """Who called (`caller()` on the request path): a static token's fingerprint (never the token), a JWT's client
    and subject, or `local`."""
    return redact(who)


def _client(ctx: ServerRequestContext[Any, Any], params: Mapping[str, Any]) -> tuple[str, str] | None:
    info: Any = None
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        info = ((params.get("_meta") or {}).get("io.modelcontextprotocol/clientInfo")) or None
    elif ctx.session.client_params is not None:
        info = ctx.session.client_params.client_info
    if info is None:
        return None
    name = info.get("name") if isinstance(info, dict) else getattr(info, "name", None)
    version = info.get("version") if isinstance(info, dict) else getattr(info, "version", None)
    return str(name), str(version)  # redacted, then cut, by the writer


def _transport() -> str:
    from fastmcp.server.context import _current_transport

    return _current_transport.get() or "in-memory"


def _session(ctx: ServerRequestContext[Any, Any]) -> str | None:
    session_id = getattr(ctx.session._connection, "session_id", None)
    return str(session_id) if session_id else None


class _Destination:
    """Where lines go, written with `os.write` on a descriptor of its own: no Python lock is held while a write
    waits on a slow destination, so neither the human log (stderr) nor interpreter exit can be stuck behind it."""

    def __init__(self, destination: str) -> None:
        self.path = None if destination == "stderr" else destination
        self.fd = os.dup(sys.stderr.fileno()) if self.path is None else self._open(self.path)
        self._identity = self._stat_identity()

    @staticmethod
    def _open(path: str) -> int:
        return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)

    def _stat_identity(self) -> tuple[int, int]:
        status = os.fstat(self.fd)
        return status.st_dev, status.st_ino

    def _reopen_if_moved(self) -> None:
        """logrotate moved the file away: the next lines go to a new one at the path (WatchedFileHandler's rule)."""
        if self.path is None:
            return
        try:
            status = os.stat(self.path)
            moved = (status.st_dev, status.st_ino) != self._identity
        except FileNotFoundError:
            moved = True
        if moved:
            fd = self._open(self.path)
            os.close(self.fd)
            self.fd = fd
            self._identity = self._stat_identity()

    def write(self, lines: list[str]) -> None:
        """Whole lines, in chunks of at most `_CHUNK_BYTES` (a longer line alone)."""
        self._reopen_if_moved()
        chunk: list[bytes] = []
        size = 0
        for text in lines:
            line = text.encode() + b"\n"
            if chunk and size + len(line) > _CHUNK_BYTES:
                self._write_all(b"".join(chunk))
                chunk, size = [], 0
            chunk.append(line)
            size += len(line)
        if chunk:
            self._write_all(b"".join(chunk))

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view) :]

    def close(self) -> None:
        os.close(self.fd)


class _Writer:
    """The bounded queue and the one thread that drains it; see the module docstring.

    Waking a thread costs more than formatting a line on a busy machine (the kernel may run the woken thread at
    once and the caller waits for a core), so a call wakes the writer only when it sleeps with nothing to do;
    while lines keep coming it takes them every `_LINGER_S`."""

    def __init__(self, destination: _Destination, max_queued_lines: int) -> None:
        self.destination = destination
        self.max_queued_lines = max_queued_lines
        self._queue: deque[tuple[_Facts, int]] = deque()
        self._lock = threading.Condition(threading.Lock())
        self._pending = 0  # queued or being written
        self._chars = 0
        self._idle = True  # the writer waits for `_wake` (or has not started)
        self._wake = threading.Event()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self.dropped = 0
        self._dropping = 0  # lines dropped in the current burst
        self._stuck = False  # a flush gave up and no write has completed since: the next one need not wait again

    def put(self, facts: _Facts) -> bool:
        """Queue one line; False if it was dropped because the writer is that far behind."""
        weight = facts.weight()
        wake = False
        with self._lock:
            full = self._pending >= self.max_queued_lines or self._chars + weight > MAX_QUEUED_CHARS
            if full:
                burst_began = self._count_dropped(1)
            else:
                self._pending += 1
                self._chars += weight
                self._queue.append((facts, weight))
                burst_ended, self._dropping = self._dropping, 0
                wake, self._idle = self._idle, False
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name="audit-writer", daemon=True)
                    self._thread.start()
        # Logged and counted outside the lock: the writer needs it to make room, and the human log may be slow too.
        if full:
            self._report_dropped(1, burst_began)
            return False
        if wake:
            self._wake.set()
        if burst_ended:
            logger.warning("audit lines are queued again, after %d were dropped", burst_ended)
        return True

    def _count_dropped(self, lines: int) -> bool:
        """Under the lock; True if these lines begin a burst of drops."""
        self.dropped += lines
        began = not self._dropping
        self._dropping += lines
        return began

    def _report_dropped(self, lines: int, burst_began: bool) -> None:
        """One warning per burst of drops; every drop counted for /metrics."""
        if burst_began:
            logger.warning(
                "the audit log's destination is not keeping up: dropping audit lines until it does (each counted "
                "in mcp_audit_dropped_total; at most %d lines wait)",
                self.max_queued_lines,
            )
        # Only where the HTTP transport loaded the metrics: importing them here would load them on stdio.
        metrics = sys.modules.get("mcp_server_core.operations.metrics")
        if metrics is not None:
            metrics.record_audit_dropped(lines)

    def _run(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            time.sleep(_LINGER_S)  # let the call that woke us send its answer; gather the lines after it
            while True:
                with self._lock:
                    batch = [self._queue.popleft() for _ in range(min(len(self._queue), _MAX_BATCH_LINES))]
                    if not batch:
                        self._idle = True
                        if self._stopping:
                            return
                        break
                self._write(batch)

    def _write(self, batch: list[tuple[_Facts, int]]) -> None:
        lost = 0
        for start in range(0, len(batch), _LINES_PER_WRITE):
            lines = []
            for facts, _weight in batch[start : start + _LINES_PER_WRITE]:
                try:
                    lines.append(_line(facts))
                except Exception:  # one line that cannot be formatted must not lose the others
                    logger.exception("could not format an audit line")
                    lost += 1
            try:
                self.destination.write(lines)
            except OSError as exc:
                logger.warning("could not write %d audit lines: %s", len(lines), exc)
                lost += len(lines)
        burst_began = False
        with self._lock:
            self._stuck = False
            self._pending -= len(batch)
            self._chars -= sum(weight for _facts, weight in batch)
            if lost:
                burst_began = self._count_dropped(lost)
            self._lock.notify_all()
        if lost:
            self._report_dropped(lost, burst_began)

    def flush(self, timeout_s: float) -> bool:
        with self._lock:
            if self._stuck or (self._thread is not None and self._thread.ident == threading.get_ident()):
                return self._pending == 0
            flushed = self._lock.wait_for(lambda: self._pending == 0, timeout_s)
            self._stuck = not flushed
        if not flushed:
            logger.warning(
                "the audit log's destination took no lines for %.0f s: %d lines left unwritten",
                timeout_s,
                self._pending,
            )
        return flushed

    def close(self, timeout_s: float) -> None:
        flushed = self.flush(timeout_s)
        with self._lock:
            self._stopping = True
        self._wake.set()
        if flushed:  # a writer stuck in a write keeps its descriptor; the process is leaving or reconfiguring
            self.destination.close()

    def after_fork(self) -> _Writer:
        """The same destination for a forked worker: a thread does not survive a fork, so it gets its own queue."""
        return _Writer(self.destination, self.max_queued_lines)


_writer: _Writer | None = None


def _after_fork_in_child() -> None:
    global _writer
    if _writer is not None:
        _writer = _writer.after_fork()


def _flush_at_exit() -> None:
    if _writer is not None:
        _writer.flush(FLUSH_TIMEOUT_S)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
atexit.register(_flush_at_exit)
