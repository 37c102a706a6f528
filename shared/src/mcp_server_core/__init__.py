"""mcp-server-core: the conventions every server of the reference family is built on.

Names are imported on first use, so `import mcp_server_core` stays cheap (a server's `--help` and
`--print-config` do not pay for fastmcp).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from mcp_server_core import _environment as _environment
from mcp_server_core._version import __version__

if TYPE_CHECKING:
    from mcp_server_core.conventions.errors import (
        Conflict,
        InvalidArgument,
        NotFound,
        RateLimited,
        Refused,
        ToolFailure,
        Unavailable,
        did_you_mean,
        os_failure,
        redact,
        register_secret,
    )
    from mcp_server_core.conventions.patterns import compile_linear
    from mcp_server_core.conventions.settings import ServerSettings
    from mcp_server_core.conventions.tools import (
        DEFAULT_BUDGET,
        Cursor,
        Limit,
        Media,
        Rendered,
        ToolDefinition,
        call_context,
        cut_to_budget,
        decode_cursor,
        encode_cursor,
        note_at_end,
        note_in_answer,
        take_within_budget,
        tool,
    )
    from mcp_server_core.conventions.untrusted import Untrusted, fence, one_line
    from mcp_server_core.operations.audit import audit_target
    from mcp_server_core.operations.tracing import start_upstream_span, upstream_span
    from mcp_server_core.protocol.cancellation import cancel_on_abandon
    from mcp_server_core.protocol.notifications import ChangeHub
    from mcp_server_core.protocol.progress import report_progress
    from mcp_server_core.protocol.resources import ResourceSet
    from mcp_server_core.protocol.server import ReferenceServer
    from mcp_server_core.protocol.toolsets import SessionsUnavailable, Toolset
    from mcp_server_core.tracks.cli import ServerSpec, run

_EXPORTS = {
    "audit_target": "operations.audit",
    "cancel_on_abandon": "protocol.cancellation",
    "ServerSpec": "tracks.cli",
    "run": "tracks.cli",
    "DEFAULT_BUDGET": "conventions.tools",
    "Cursor": "conventions.tools",
    "Media": "conventions.tools",
    "call_context": "conventions.tools",
    "Rendered": "conventions.tools",
    "ToolDefinition": "conventions.tools",
    "cut_to_budget": "conventions.tools",
    "decode_cursor": "conventions.tools",
    "encode_cursor": "conventions.tools",
    "Limit": "conventions.tools",
    "note_at_end": "conventions.tools",
    "note_in_answer": "conventions.tools",
    "compile_linear": "conventions.patterns",
    "Untrusted": "conventions.untrusted",
    "fence": "conventions.untrusted",
    "one_line": "conventions.untrusted",
    "take_within_budget": "conventions.tools",
    "tool": "conventions.tools",
    "Conflict": "conventions.errors",
    "InvalidArgument": "conventions.errors",
    "NotFound": "conventions.errors",
    "RateLimited": "conventions.errors",
    "Refused": "conventions.errors",
    "ToolFailure": "conventions.errors",
    "Unavailable": "conventions.errors",
    "did_you_mean": "conventions.errors",
    "os_failure": "conventions.errors",
    "redact": "conventions.errors",
    "register_secret": "conventions.errors",
    "ChangeHub": "protocol.notifications",
    "report_progress": "protocol.progress",
    "ResourceSet": "protocol.resources",
    "ReferenceServer": "protocol.server",
    "ServerSettings": "conventions.settings",
    "SessionsUnavailable": "protocol.toolsets",
    "Toolset": "protocol.toolsets",
    "start_upstream_span": "operations.tracing",
    "upstream_span": "operations.tracing",
}

__all__ = [
    "DEFAULT_BUDGET",
    "ChangeHub",
    "Conflict",
    "Cursor",
    "InvalidArgument",
    "Limit",
    "Media",
    "NotFound",
    "RateLimited",
    "ReferenceServer",
    "Refused",
    "Rendered",
    "ResourceSet",
    "ServerSettings",
    "ServerSpec",
    "SessionsUnavailable",
    "ToolDefinition",
    "ToolFailure",
    "Toolset",
    "Unavailable",
    "Untrusted",
    "__version__",
    "audit_target",
    "call_context",
    "cancel_on_abandon",
    "compile_linear",
    "cut_to_budget",
    "decode_cursor",
    "did_you_mean",
    "encode_cursor",
    "fence",
    "note_at_end",
    "note_in_answer",
    "one_line",
    "os_failure",
    "redact",
    "register_secret",
    "report_progress",
    "run",
    "start_upstream_span",
    "take_within_budget",
    "tool",
    "upstream_span",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mcp_server_core' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"mcp_server_core.{module}"), name)
    globals()[name] = value
    return value
