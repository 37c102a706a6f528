"""mcp-server-filesystem: files over MCP, contained to the allowed roots, written atomically."""

__version__ = "0.1.0"
__all__ = ["__version__", "main"]


def main() -> None:
    """The console script and `python -m mcp_server_filesystem`."""
    from mcp_server_core.tracks.cli import run

    from mcp_server_filesystem.spec import SPEC

    run(SPEC)
