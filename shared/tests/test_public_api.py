"""The helpers' public surface is pinned: a fork depends on these names, so changing one is a decision."""

from __future__ import annotations

import subprocess
import sys

import mcp_server_core
import mcp_server_core.testing

PUBLIC = [
    "ChangeHub",
    "Conflict",
    "Cursor",
    "DEFAULT_BUDGET",
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
    "os_failure",
    "redact",
    "note_at_end",
    "note_in_answer",
    "compile_linear",
    "Untrusted",
    "fence",
    "one_line",
    "register_secret",
    "report_progress",
    "run",
    "start_upstream_span",
    "take_within_budget",
    "tool",
    "upstream_span",
]

TESTING = [
    "ERAS",
    "HAPROXY",
    "NGINX",
    "REDIS_SERVER",
    "nginx",
    "redis_server",
    "Asked",
    "ContractSuite",
    "HttpWire",
    "StdioWire",
    "WireError",
    "assert_no_secret",
    "free_port",
    "haproxy",
    "modern_meta",
    "module_at",
    "python_module",
    "recorded_spans",
    "spawn_http_server",
    "tools_list_bytes",
]


def test_the_public_names_are_exactly_these() -> None:
    assert sorted(mcp_server_core.__all__) == sorted(PUBLIC)
    for name in PUBLIC:
        assert getattr(mcp_server_core, name) is not None


def test_the_testing_kit_names_are_exactly_these() -> None:
    assert sorted(mcp_server_core.testing.__all__) == sorted(TESTING)


def test_importing_the_package_does_not_import_fastmcp() -> None:
    probe = "import sys, mcp_server_core; print('fastmcp' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout == "False\n"
