"""The testing kit: raw wire clients, an in-memory client per protocol era, and the contract suite.

Import it from tests only (it needs pytest): `from mcp_server_core.testing import ContractSuite, StdioWire`.
"""

from mcp_server_core.testing.confirmations import Asked
from mcp_server_core.testing.contract import ERAS, ContractSuite, assert_no_secret, tools_list_bytes
from mcp_server_core.testing.modules import module_at
from mcp_server_core.testing.services import HAPROXY, NGINX, REDIS_SERVER, haproxy, nginx, redis_server
from mcp_server_core.testing.spans import recorded_spans
from mcp_server_core.testing.wire import (
    HttpWire,
    StdioWire,
    WireError,
    free_port,
    modern_meta,
    python_module,
    spawn_http_server,
)

__all__ = [
    "ERAS",
    "HAPROXY",
    "NGINX",
    "REDIS_SERVER",
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
    "nginx",
    "python_module",
    "recorded_spans",
    "redis_server",
    "spawn_http_server",
    "tools_list_bytes",
]
