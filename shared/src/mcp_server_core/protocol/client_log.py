"""Client logging: the server's log lines made while serving a call also reach that call's client.

MCP lets a client ask for log messages at a level of its choosing (`logging/setLevel`); the server sends them
as `notifications/message`. fastmcp keeps each connection's chosen level and sends through `Context.log`; this
handler feeds it the family's own log lines (the same classed, redacted text the operator's log has: `[tool
failure]`, `[upstream failure]`, `[internal bug]`, protocol errors with their code), without tracebacks, which
stay in the server's log. A client that chose no level gets warnings and worse (`DEFAULT_CLIENT_LEVEL`).

Only records made inside a call are sent, and only to that call's client: nothing one client does reaches
another's log. Only the family's lines are: fastmcp's failed-call line and the `mcp_server*` loggers, not what
the libraries below log (request lines, connection pools). The handler sees what the loggers pass on: INFO and
worse for fastmcp's and the helpers' loggers (errors.configure_logging), the operator's `--log-level` for the
servers' own.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable

from mcp_server_core.conventions.errors import RedactingFormatter, is_failed_call
from mcp_server_core.conventions.tools import call_context
from mcp_server_core.protocol.progress import send_for_call

__all__ = ["DEFAULT_CLIENT_LEVEL", "ClientLogHandler", "forward_to_clients"]

DEFAULT_CLIENT_LEVEL = "warning"
"""What a client that sent no logging/setLevel receives: what an operator would want a user to see."""

_MCP_LEVEL = {logging.DEBUG: "debug", logging.INFO: "info", logging.WARNING: "warning", logging.ERROR: "error"}


class ClientLogHandler(logging.Handler):
    """Forwards the records of the call being served to its client, at the level the client chose."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(_LineFormatter("%(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        if not (record.name.startswith("mcp_server") or is_failed_call(record)):
            return
        ctx = call_context()
        if ctx is None:
            return
        level = _MCP_LEVEL.get(record.levelno, "critical" if record.levelno > logging.ERROR else "debug")
        try:
            line = self.format(record)
        except Exception:  # a record that cannot be formatted is the operator's log's problem, not the client's
            return
        send_for_call(ctx.log(line, level=level, logger_name=record.name))  # type: ignore[arg-type]


class _LineFormatter(RedactingFormatter):
    """The classed, redacted line without its traceback: the traceback stays in the server's own log."""

    def format(self, record: logging.LogRecord) -> str:
        plain = logging.makeLogRecord({**record.__dict__, "exc_info": None, "exc_text": None, "stack_info": None})
        return super().format(plain)


_installed: list[ClientLogHandler] = []
_users = 0


def forward_to_clients() -> Callable[[], None]:
    """Install the one handler on the root logger while a server runs; returns what removes it. Counted, so
    that two servers in one process (tests) share one handler and no line is sent twice."""
    global _users
    if not _installed:
        # The SDK marks its log method deprecated for 2026-07-28 clients, which get no log lines from it anyway; for
        # the handshake eras logging is current, and the warning went raw to the operator's stderr.
        warnings.filterwarnings("ignore", message="The logging capability is deprecated", category=UserWarning)
        _installed.append(ClientLogHandler())
        logging.getLogger().addHandler(_installed[0])
    _users += 1

    def remove() -> None:
        global _users
        _users -= 1
        if _users == 0 and _installed:
            logging.getLogger().removeHandler(_installed.pop())

    return remove
