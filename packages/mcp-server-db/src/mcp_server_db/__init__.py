"""mcp-server-db: a database inspector over MCP whose read-only mode holds at the parser and the engine."""

__version__ = "0.1.0"
__all__ = ["__version__", "main"]


def main() -> None:
    """The console script and `python -m mcp_server_db`."""
    from mcp_server_core.tracks.cli import run

    from mcp_server_db.spec import SPEC

    run(SPEC)
