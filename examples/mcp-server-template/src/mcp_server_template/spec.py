"""What the family's command line knows of this server: settings, arguments, how to build it (imported only
when serving) and its toolsets alone, for the command-line track, which never imports fastmcp."""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from mcp_server_core import ServerSpec, Toolset

from mcp_server_template.settings import TemplateSettings


@contextmanager
def toolsets(settings: TemplateSettings) -> Iterator[Sequence[Toolset]]:
    from mcp_server_template.notes import NoteStore, notes_toolset

    yield [notes_toolset(NoteStore(settings.notes_dir))]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--notes-dir", help="folder the notes live in")
    parser.add_argument(
        "--conformance", action="store_const", const=True, help="also serve the official conformance fixtures"
    )


SPEC = ServerSpec(
    distribution="mcp-server-template",
    summary="Notes in a folder over MCP: the template of the reference server family.",
    settings=TemplateSettings,
    build="mcp_server_template.server:build_server",
    toolsets=toolsets,
    skill="Use to read, search and write the user's notes (text files in one folder) from a shell.",
    add_arguments=add_arguments,
)
