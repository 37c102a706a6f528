"""mcp-server-template: notes in a folder, served over MCP with every convention of the family."""

__version__ = "0.1.0"
__all__ = ["__version__", "main"]


def main() -> None:
    """The console script and `python -m mcp_server_template`."""
    from mcp_server_core.tracks.cli import run

    from mcp_server_template.spec import SPEC

    run(SPEC)
