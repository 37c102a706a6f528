"""mcp-server-slack: Slack over MCP through slack-sdk: reads first, writes only where allowed."""

__version__ = "0.1.0"
__all__ = ["__version__", "main"]


def main() -> None:
    """The console script and `python -m mcp_server_slack`."""
    from mcp_server_core.tracks.cli import run

    from mcp_server_slack.spec import SPEC

    run(SPEC)
