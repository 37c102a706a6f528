"""What the family's command line knows of this server: settings, arguments, how to build it (imported only
when serving) and its toolsets alone, for the command-line track, which never imports fastmcp."""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from mcp_server_core import ServerSpec, Toolset
from mcp_server_core.tracks.cli import add_upstream_identity_arguments

from mcp_server_slack.settings import SlackSettings

if TYPE_CHECKING:
    from mcp_server_slack.api import SlackApi
    from mcp_server_slack.directory import Directory


def check_tokens(settings: SlackSettings) -> None:
    """Refuse settings no call could work with, before anything starts."""
    if settings.bot_token is None and settings.user_token is None and settings.upstream_identity == "single":
        raise ValueError(
            "no Slack token: set SLACK_BOT_TOKEN (xoxb-...) or SLACK_USER_TOKEN (xoxp-...), or pass --token-file"
        )
    if settings.allow_write and not settings.write_channels:
        raise ValueError("--allow-write needs --write-channels C123,#general: the channels writes may go to")


def slack_toolsets(settings: SlackSettings, api: SlackApi, directory: Directory) -> list[Toolset]:
    """The read toolset, and the write toolset when writes are on: the same on both tracks."""
    from mcp_server_slack.posting import MentionPolicy
    from mcp_server_slack.tools import WritePolicy, read_toolset, write_toolset

    chosen = [read_toolset(api, directory)]
    if settings.writes_enabled:
        mentions = MentionPolicy(settings.allow_mentions, allow_broadcast=settings.allow_broadcast)
        policy = WritePolicy(directory, settings.write_channels, mentions)
        chosen.append(write_toolset(api, directory, policy))
    return chosen


@contextmanager
def toolsets(settings: SlackSettings) -> Iterator[Sequence[Toolset]]:
    # A command always calls Slack: slack-sdk loads here, while the helpers keep the collector paused for
    # start-up (cli._run_command), rather than inside the call. The server keeps it for its first call.
    import mcp_server_slack.transport  # noqa: F401
    from mcp_server_slack.api import SlackApi
    from mcp_server_slack.directory import Directory

    check_tokens(settings)
    api = SlackApi(settings)
    yield slack_toolsets(settings, api, Directory(api, ttl_s=settings.cache_ttl_s, max_items=settings.max_cached))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    slack = parser.add_argument_group("Slack (tokens only from SLACK_BOT_TOKEN / SLACK_USER_TOKEN or a file)")
    slack.add_argument("--token-file", help="file with an xoxb and/or xoxp token, one per line")
    slack.add_argument("--api-url", help="Slack Web API base URL (default https://slack.com/api/)")
    slack.add_argument("--timeout-s", type=float, help="seconds to wait for one Slack answer (default 15)")
    slack.add_argument("--max-retry-wait-s", type=float, help="longest Retry-After waited out once (default 10)")
    slack.add_argument("--cache-ttl-s", type=float, help="seconds names of users and channels are kept (default 600)")
    slack.add_argument(
        "--allow-write", action="store_const", const=True, help="offer post_message, reply_to_thread, add_reaction"
    )
    slack.add_argument(
        "--write-channels", action="append", help="channels writes may go to, e.g. C0123ABCD,#general (required)"
    )
    slack.add_argument(
        "--allow-broadcast", action="store_const", const=True, help="let posts mention @channel, @here, @everyone"
    )
    slack.add_argument(
        "--allow-mentions", action="append", help="who posts may mention: users (anyone), U… user or S… group IDs"
    )
    add_upstream_identity_arguments(parser)


def host_env(settings: SlackSettings) -> dict[str, str]:
    """A host snippet needs a token unless --token-file names one."""
    return {} if settings.token_file is not None else {"SLACK_BOT_TOKEN": "xoxb-your-bot-token"}


SPEC = ServerSpec(
    distribution="mcp-server-slack",
    summary="Slack over MCP: channels, history, threads, people and search; writes only to allowed channels.",
    settings=SlackSettings,
    build="mcp_server_slack.server:build_server",
    toolsets=toolsets,
    skill="Use to read Slack channels, threads and people, search messages, and post where allowed, from a shell.",
    add_arguments=add_arguments,
    host_env=host_env,
)
