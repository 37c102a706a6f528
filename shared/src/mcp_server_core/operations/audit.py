"""The audit trail: one JSON line per tool call, resource read and prompt get, on its own logger.

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
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import sys
import time
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from logging.handlers import WatchedFileHandler
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
    "note_failure",
]

AUDIT_LOGGER = "mcp_server_core.operations.audit"
AUDITED = {"tools/call": "name", "resources/read": "uri", "prompts/get": "name"}
"""The methods audited, and the param that names what they act on."""
_MAX_ARGUMENT_CHARS = 4_000

logger = logging.getLogger(AUDIT_LOGGER)
logger.propagate = False  # its own destination, never mixed into the human log
logger.setLevel(logging.CRITICAL + 1)  # off until configure_audit_log says where the lines go


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


def configure_audit_log(destination: str | None) -> None:
    """Send audit lines to `destination`: "stderr", a file path (reopened when logrotate moves it), or nowhere."""
    for old in list(logger.handlers):
        logger.removeHandler(old)
        old.close()
    if not destination:
        logger.setLevel(logging.CRITICAL + 1)
        return
    handler: logging.Handler
    if destination == "stderr":
        handler = logging.StreamHandler(sys.stderr)
    else:
        handler = WatchedFileHandler(destination, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)


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
        writing = logger.isEnabledFor(logging.INFO)
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
                    metrics.finished(ctx.method, subject, outcome, note.category, seconds, principal=_principal())
                if writing:
                    self._write(ctx, subject_key, note, outcome, code, result, seconds)
            except Exception:  # the trail must never break the call it records
                logging.getLogger(__name__).exception("could not write an audit line")

    def _write(
        self,
        ctx: ServerRequestContext[Any, Any],
        subject_key: str,
        note: AuditNote,
        outcome: str,
        code: int | None,
        result: HandlerResult,
        seconds: float,
    ) -> None:
        params = dict(ctx.params or {})
        arguments = params.get("arguments") or {}
        canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=str)
        client = _client(ctx, params)
        line: dict[str, Any] = {
            "time": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "server": self.server,
            "version": self.version,
            "principal": _principal(),
            "client": client,
            "protocol_version": ctx.protocol_version,
            "transport": _transport(),
            "session": _session(ctx),
            "method": ctx.method,
            subject_key: redact(str(params.get(subject_key, ""))),
            "arguments_digest": hashlib.sha256(canonical.encode()).hexdigest()[:32],
            "outcome": outcome,
            "duration_ms": round(seconds * 1000, 3),
            "bytes": _size(result),
        }
        if code is not None:
            line["code"] = code
        if note.category is not None and outcome in ("tool_error", "refused"):
            line["category"] = note.category
        if note.targets:
            line["targets"] = note.targets
        if note.acting_as is not None:
            line["acting_as"] = redact(note.acting_as)
        if note.confirmation is not None:
            line["cross_write_confirmation"] = note.confirmation
        if self.include_arguments:
            line["arguments"] = redact(canonical[:_MAX_ARGUMENT_CHARS])
        logger.info(json.dumps(line, separators=(",", ":"), ensure_ascii=False))


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


def _principal() -> str:
    """Who called: a static token's fingerprint (never the token), a JWT's client and subject, or `local`."""
    return redact(caller())


def _client(ctx: ServerRequestContext[Any, Any], params: dict[str, Any]) -> dict[str, str] | None:
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
    return {"name": redact(str(name))[:200], "version": redact(str(version))[:100]}


def _transport() -> str:
    from fastmcp.server.context import _current_transport

    return _current_transport.get() or "in-memory"


def _session(ctx: ServerRequestContext[Any, Any]) -> str | None:
    session_id = getattr(ctx.session._connection, "session_id", None)
    return str(session_id) if session_id else None
