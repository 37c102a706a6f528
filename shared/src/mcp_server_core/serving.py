"""Running a server: logging on stderr (redacted), then stdio or Streamable HTTP."""

from __future__ import annotations

import logging
import sys

import anyio
from fastmcp.server.context import reset_transport, set_transport

from mcp_server_core.errors import RedactingFormatter
from mcp_server_core.server import ReferenceServer
from mcp_server_core.settings import LogLevel, ServerSettings
from mcp_server_core.stdio import stdio_transport

__all__ = ["configure_logging", "serve", "serve_stdio"]


def configure_logging(level: LogLevel) -> None:
    """One plain, redacted handler on stderr for everything: stdout belongs to the protocol."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(RedactingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for name in ("fastmcp", "mcp", "uvicorn", "uvicorn.error", "uvicorn.access"):
        library_logger = logging.getLogger(name)
        library_logger.handlers[:] = []
        library_logger.propagate = True
        library_logger.setLevel(level)


async def serve_stdio(server: ReferenceServer) -> None:
    token = set_transport("stdio")
    try:
        async with server._lifespan_manager(), stdio_transport() as (read_stream, write_stream):
            sdk = server._mcp_server
            await sdk.run(read_stream, write_stream, sdk.create_initialization_options())
    finally:
        reset_transport(token)


async def serve_http(server: ReferenceServer, settings: ServerSettings) -> None:
    import uvicorn

    from mcp_server_core.http import build_http_app

    app = build_http_app(server, settings)
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_config=None,  # keep configure_logging's redacted handler
        log_level=settings.log_level.lower(),
        server_header=False,
        timeout_graceful_shutdown=10,
    )
    uvicorn_server = uvicorn.Server(config)
    await uvicorn_server.serve()


def serve(server: ReferenceServer, settings: ServerSettings) -> None:
    """Serve until the client leaves (stdio) or the process is stopped (HTTP)."""
    configure_logging(settings.log_level)
    if settings.transport == "http":
        anyio.run(serve_http, server, settings)
    else:
        anyio.run(serve_stdio, server)
