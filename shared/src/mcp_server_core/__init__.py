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
    from mcp_server_core.audit import audit_target
    from mcp_server_core.cancellation import cancel_on_abandon
    from mcp_server_core.cli import ServerSpec, run
    from mcp_server_core.conventions import (
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
        note_in_answer,
        take_within_budget,
        tool,
    )
    from mcp_server_core.errors import (
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
    from mcp_server_core.notifications import ChangeHub
    from mcp_server_core.progress import report_progress
    from mcp_server_core.resources import ResourceSet
    from mcp_server_core.server import ReferenceServer
    from mcp_server_core.settings import ServerSettings
    from mcp_server_core.toolsets import SessionsUnavailable, Toolset
    from mcp_server_core.tracing import start_upstream_span, upstream_span

_EXPORTS = {
    "audit_target": "audit",
    "cancel_on_abandon": "cancellation",
    "ServerSpec": "cli",
    "run": "cli",
    "DEFAULT_BUDGET": "conventions",
    "Cursor": "conventions",
    "Media": "conventions",
    "call_context": "conventions",
    "Rendered": "conventions",
    "ToolDefinition": "conventions",
    "cut_to_budget": "conventions",
    "decode_cursor": "conventions",
    "encode_cursor": "conventions",
    "Limit": "conventions",
    "note_in_answer": "conventions",
    "take_within_budget": "conventions",
    "tool": "conventions",
    "Conflict": "errors",
    "InvalidArgument": "errors",
    "NotFound": "errors",
    "RateLimited": "errors",
    "Refused": "errors",
    "ToolFailure": "errors",
    "Unavailable": "errors",
    "did_you_mean": "errors",
    "os_failure": "errors",
    "redact": "errors",
    "register_secret": "errors",
    "ChangeHub": "notifications",
    "report_progress": "progress",
    "ResourceSet": "resources",
    "ReferenceServer": "server",
    "ServerSettings": "settings",
    "SessionsUnavailable": "toolsets",
    "Toolset": "toolsets",
    "start_upstream_span": "tracing",
    "upstream_span": "tracing",
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
    "__version__",
    "audit_target",
    "call_context",
    "cancel_on_abandon",
    "cut_to_budget",
    "decode_cursor",
    "did_you_mean",
    "encode_cursor",
    "note_in_answer",
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
