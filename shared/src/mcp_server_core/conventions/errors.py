"""The family's tool-failure types and secret redaction.

Domain code raises one of these; `ReferenceServer` turns them into `isError: true` results and everything
else that can reach a client (protocol errors, logs) passes through `redact`. A failure message says what
failed, why, and what to try instead, because the reader is a model that will act on it.
"""

from __future__ import annotations

import difflib
import errno
import logging
import re
import sys
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING

from mcp_server_core.conventions.untrusted import label_safe

if TYPE_CHECKING:
    from mcp_server_core.conventions.settings import LogLevel

__all__ = [
    "Conflict",
    "InvalidArgument",
    "NotFound",
    "RateLimited",
    "Refused",
    "ToolFailure",
    "Unavailable",
    "configure_logging",
    "did_you_mean",
    "failure_text",
    "forget_secret",
    "is_registered_secret",
    "os_failure",
    "redact",
    "register_secret",
]


class ToolFailure(Exception):
    """A tool call that failed for a reason the model can act on; the base of every category.

    A plain exception, not fastmcp's `ToolError`: domain code and the command-line track raise it without
    importing fastmcp. On the MCP track the helpers turn it into an isError result (conventions.py, server.py).
    """

    category = "failed"
    log_level = logging.INFO
    """How loudly fastmcp logs the failure: the model's to act on, not a server fault (hosts show ERROR lines
    from a server's stderr as the server failing)."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        self.hint = hint
        super().__init__(failure_text(f"{message} {hint}" if hint else message))


class NotFound(ToolFailure):
    """The thing the arguments name does not exist (a table, file, channel, issue)."""

    category = "not_found"


class InvalidArgument(ToolFailure):
    """Arguments that pass the schema but cannot be used (a range past the end, an unparsable query)."""

    category = "invalid_argument"


class Refused(ToolFailure):
    """A policy refuses the call: read-only mode, a path outside the roots, a channel not allowed."""

    category = "refused"


class Conflict(ToolFailure):
    """The state is not what the call expected: a stale hash, a target that already exists."""

    category = "conflict"


class Unavailable(ToolFailure):
    """An upstream service failed or timed out; retrying later may work."""

    category = "unavailable"
    log_level = logging.WARNING  # the operator may want to know an upstream is struggling


class RateLimited(Unavailable):
    """An upstream rate limit; says when to retry."""

    category = "rate_limited"

    def __init__(self, message: str, *, retry_after: float | None = None, hint: str | None = None) -> None:
        self.retry_after = retry_after
        if retry_after is not None and hint is None:
            hint = f"Retry after {retry_after:.0f} s."
        super().__init__(message, hint=hint)


MAX_FAILURE_CHARS = 4_000
"""A failure message's longest form: it says what failed and what to try, never carries a body; an upstream's or a
database's words inside it (an error that echoes a value, a trigger's message) are cut to fit."""


MAX_LOG_CHARS = 8_000
"""A log line's message at most (its traceback aside): a line says what happened, never carries a body."""


def failure_text(text: str) -> str:
    """A failure's message as the client gets it, on both tracks: redacted, one line, at most `MAX_FAILURE_CHARS`.

    A message quotes what came from outside (a database's error naming a hostile constraint or raising a
    trigger's text, an upstream's reason, a name the caller gave): a line break there would start a line that
    reads as the server's, an escape sequence or bidi control would repaint it. They are escaped as the one-line
    form escapes them (`\\n`, `\\x1b`, `\\u202e`); the server's own messages are one line already.
    """
    text = redact(text[: 4 * MAX_FAILURE_CHARS])  # escaping grows a character to at most ten: cut, then escape
    return label_safe(text, MAX_FAILURE_CHARS)


def did_you_mean(name: str, candidates: Iterable[str], *, noun: str = "name") -> str:
    """A hint naming the closest candidates, for messages like "table 'ordrs' not found; did you mean 'orders'?"."""
    pool = list(candidates)
    close = difflib.get_close_matches(name, pool, n=3, cutoff=0.6)
    if close:
        return "Did you mean " + " or ".join(repr(c) for c in close) + "?"
    if not pool:
        return f"There is no {noun} to choose from."
    shown = ", ".join(repr(c) for c in sorted(pool)[:10])
    more = f" and {len(pool) - 10} more" if len(pool) > 10 else ""
    return f"Known {noun}s: {shown}{more}."


# What the operating system said, as a cause and a next step (docs/conventions.md has the table). The class
# is whose move it is: Refused and InvalidArgument the caller's (another path, another name), Unavailable the
# machine's (space, descriptors: retrying later or elsewhere may work), Conflict the moment's (in use now).
_OS_ERRORS: dict[int, tuple[type[ToolFailure], str, str]] = {
    errno.ENOSPC: (Unavailable, "no space left on the device", "Free space on that device, or write elsewhere."),
    errno.EDQUOT: (Unavailable, "the disk quota is used up", "Free space within the quota, or write elsewhere."),
    errno.EROFS: (Refused, "the filesystem is mounted read-only", "Write to a read-write place; reading works."),
    errno.EACCES: (Refused, "permission denied", "The server's user may not do this there: choose another path."),
    errno.EPERM: (
        Refused,
        "operation not permitted (an immutable or protected entry)",
        "It stays unless its owner lifts the protection (chattr -i, a sticky directory).",
    ),
    errno.EMFILE: (Unavailable, "too many open files in the server", "Retry shortly; if it persists, raise ulimit -n."),
    errno.ENFILE: (Unavailable, "too many open files on the machine", "Retry shortly."),
    errno.ENAMETOOLONG: (
        InvalidArgument,
        "a name is too long (at most 255 bytes a name, 4,096 a path)",
        "Use a shorter name.",
    ),
    errno.ELOOP: (Refused, "too many levels of symbolic links", "Name the place itself, not a link to it."),
    errno.EXDEV: (
        InvalidArgument,
        "the source and the destination are on different filesystems",
        "Copy it, then delete the original.",
    ),
    errno.EBUSY: (Conflict, "it is in use (a mount point, or held by a program)", "Retry when it is free."),
    errno.ETXTBSY: (Conflict, "a running program is executed from that file", "Stop the program, or write elsewhere."),
    errno.EIO: (Unavailable, "the device reported an input/output error", "Check the device; a retry rarely helps."),
    errno.EFBIG: (InvalidArgument, "the file would be larger than that filesystem allows", "Write elsewhere."),
    errno.EMLINK: (InvalidArgument, "the directory has as many entries or links as it may", "Write elsewhere."),
    errno.ENOTEMPTY: (Conflict, "the directory is not empty", "Empty it first, or delete it recursively."),
    errno.EEXIST: (Conflict, "the name already exists", "Pick another name, or replace it if that is allowed."),
    errno.ENOENT: (NotFound, "it does not exist (or no longer does)", "Check the path; list its directory."),
    errno.ENOTDIR: (InvalidArgument, "a component of the path is not a directory", "Check the path."),
    errno.EISDIR: (InvalidArgument, "it is a directory", "Name a file."),
}


def os_failure(exc: OSError, doing: str) -> ToolFailure:
    """`exc` as a failure the model can act on: "<doing> failed: <cause> (<ERRNO>). <next step>".

    `doing` names the action and the path as the caller shows it ("Writing 'notes.txt'"); the path the OS
    reports is left out, since it may lie outside what the caller may see.
    """
    code = exc.errno or 0
    name = errno.errorcode.get(code, f"errno {code}")
    kind, cause, step = _OS_ERRORS.get(
        code, (ToolFailure, (exc.strerror or "an operating-system error").lower(), "Retry, or try another path.")
    )
    return kind(f"{doing} failed: {cause} ({name}).", hint=step)


RESOURCE_FAILED = -32050
"""JSON-RPC code (of the range the spec leaves to servers) for a resource read that failed as a tool call fails
with isError: refused (an upstream rejected the credentials, a path outside the roots), unavailable, rate-limited.
Its message says what to do, its data names the category; -32603 would say the server has a bug."""


# Shapes of secrets, redacted wherever they appear. Known values registered at start-up (tokens from settings)
# are redacted too, whatever their shape.
_SECRET_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # user:password@ in any URL (database URLs, proxies)
    # Anchored at the `://`, not at the scheme: a pattern that starts with the scheme is tried at every letter
    # of a long word and scans the rest of it each time (`"a" * 40_000` took 2.4 s, 200,000 a minute). The
    # scheme's last character before it is all a URL needs here; what precedes it is kept either way.
    (re.compile(r"(?<=[a-zA-Z0-9+.\-])(?P<keep>://[^:/@\s]*+:)[^@\s/]++(?=@)"), r"\g<keep>***"),
    (re.compile(r"(?i)(?P<keep>\bbearer\s+)[A-Za-z0-9\-._~+/]+=*"), r"\g<keep>***"),
    (re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"), "***"),
    (re.compile(r"\bxox[abposrce]-[A-Za-z0-9-]{8,}"), "***"),
    (
        re.compile(r"(?i)(?P<keep>\b(?:password|passwd|pwd|token|secret|api[_-]?key)\s*[=:]\s*)[^\s&;,'\"]+"),
        r"\g<keep>***",
    ),
)

_known_secrets: set[str] = set()
_known_lock = threading.Lock()


def register_secret(value: str | None) -> None:
    """Redact this value, and any start of it longer than seven characters, from every message and log line from
    now on (tokens, passwords from settings)."""
    if value and len(value) >= 4:
        with _known_lock:
            _known_secrets.add(value)


def forget_secret(value: str) -> None:
    """Stop redacting a value registered with `register_secret`: for per-caller tokens, forgotten when the cache
    that holds them lets them go, so the set stays as bounded as that cache. A configured secret is never
    forgotten: `UpstreamTokenVerifier` forgets only tokens it registered itself."""
    with _known_lock:
        _known_secrets.discard(value)


def is_registered_secret(value: str) -> bool:
    with _known_lock:
        return value in _known_secrets


PREFIX_SHOWN_MAX = 7
"""The longest start of a registered secret a message may keep: an upstream that echoes a token's first 20
characters in an error must not hand the model most of it."""


def _redact_known(text: str, secret: str) -> str:
    if len(secret) <= PREFIX_SHOWN_MAX:
        return text.replace(secret, "***")
    head = secret[: PREFIX_SHOWN_MAX + 1]
    start = text.find(head)
    if start < 0:
        return text
    # Pieces joined once: splicing the text at each hit rebuilt it per hit, quadratic in a text that repeats one.
    pieces: list[str] = []
    kept = 0
    while start >= 0:
        end, limit = start + len(head), min(len(text), start + len(secret))
        while end < limit and text[end] == secret[end - start]:
            end += 1
        pieces += (text[kept:start], "***")
        kept = end
        start = text.find(head, end)
    pieces.append(text[kept:])
    return "".join(pieces)


def redact(text: str) -> str:
    """The text with every secret, and any start of a registered one longer than seven characters, as ***."""
    for secret in sorted(_known_secrets, key=len, reverse=True):
        text = _redact_known(text, secret)
    for pattern, replacement in _SECRET_PATTERNS:
        text = pattern.sub(replacement, text)
    return text


_FAILED_CALL = ("Error calling tool", "Error reading resource", "Error rendering prompt")
_SIDE_BY_LEVEL = {
    logging.DEBUG: "tool failure",
    logging.INFO: "tool failure",
    logging.WARNING: "upstream failure",
    logging.ERROR: "internal bug",
    logging.CRITICAL: "internal bug",
}


def is_failed_call(record: logging.LogRecord) -> bool:
    """fastmcp's line for a call that failed, which the family classes by the side that failed."""
    return record.name.startswith("fastmcp") and record.getMessage().startswith(_FAILED_CALL)


class RedactingFormatter(logging.Formatter):
    """Formats a record, traceback included, then redacts it: secrets never reach the log.

    A failed call's line says which side failed: fastmcp logs it at the level its exception carries (the
    family's: a tool failure the model can act on at INFO, an upstream's at WARNING, errors.py), and an
    unexpected exception at ERROR with its traceback: an internal bug. Protocol errors are logged with their
    code by the audit middleware.
    """

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        shown = message
        if is_failed_call(record):
            shown = f"[{_SIDE_BY_LEVEL.get(record.levelno, 'internal bug')}] {message}"
        # The message is one line, whatever its arguments hold: an upstream's warning, a name, an error's text
        # with a line break would start a line that reads as the server's own, in the operator's log and in the
        # client's (client_log.py); an escape sequence would repaint the operator's terminal. The traceback the
        # formatter adds below it is the server's own and keeps its lines.
        shown = label_safe(shown[: 4 * MAX_LOG_CHARS], MAX_LOG_CHARS)
        if shown != message:
            record = logging.makeLogRecord({**record.__dict__, "msg": shown, "args": None})
        return redact(super().format(record))


def configure_logging(level: LogLevel) -> None:
    """One plain, redacted handler on stderr for everything: stdout belongs to the protocol.

    The handler prints `level` and worse; the family's loggers and fastmcp's pass INFO records on regardless,
    so that a client that asked for `info` with logging/setLevel gets its call's tool-failure lines
    (client_log.py) whatever the operator's stderr shows.
    """
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(RedactingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.setLevel(level)
    passed_on = min(logging.getLevelName(level), logging.INFO)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for name in ("fastmcp", "mcp", "uvicorn", "uvicorn.error", "uvicorn.access", "mcp_server_core"):
        library_logger = logging.getLogger(name)
        library_logger.handlers[:] = []
        library_logger.propagate = True
        library_logger.setLevel(passed_on if name in ("fastmcp", "mcp_server_core") else level)
