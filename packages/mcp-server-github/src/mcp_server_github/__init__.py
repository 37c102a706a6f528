"""mcp-server-github: GitHub over MCP through PyGithub, with a small context and untrusted content fenced."""

__version__ = "0.1.0"
__all__ = ["__version__", "main"]


def main() -> None:
    """The console script and `python -m mcp_server_github`."""
    from mcp_server_core.tracks.cli import run

    from mcp_server_github.spec import SPEC

    run(SPEC)
