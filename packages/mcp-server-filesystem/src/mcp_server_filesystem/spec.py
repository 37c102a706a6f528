"""What the family's command line knows of this server: settings, arguments, how to build it (imported only
when serving) and its toolsets alone, for the command-line track, which never imports fastmcp."""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from mcp_server_core import ServerSpec, Toolset

from mcp_server_filesystem.settings import FilesystemSettings


@contextmanager
def toolsets(settings: FilesystemSettings) -> Iterator[Sequence[Toolset]]:
    from mcp_server_filesystem.sandbox import Sandbox
    from mcp_server_filesystem.tools import Workspace, files_toolset

    yield [files_toolset(Workspace(Sandbox([str(root) for root in settings.roots])))]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("roots", nargs="*", metavar="DIR", default=None, help="directories to serve")
    parser.add_argument(
        "--allow-roots-outside",
        action="store_const",
        const=True,
        help="let the client's MCP roots reach outside the given directories",
    )
    parser.add_argument("--no-watch", dest="watch", action="store_const", const=False, help="do not watch for changes")


SPEC = ServerSpec(
    distribution="mcp-server-filesystem",
    summary="Files over MCP, contained to the allowed directories: atomic writes, edits, tree and fast search.",
    settings=FilesystemSettings,
    build="mcp_server_filesystem.server:build_server",
    toolsets=toolsets,
    skill="Use to read, search, list and edit files under given folders from a shell, without leaving them.",
    notes=["Paths are absolute or relative to the first folder given; nothing outside the folders is reached."],
    add_arguments=add_arguments,
)
