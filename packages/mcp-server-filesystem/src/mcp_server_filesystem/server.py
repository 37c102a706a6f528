"""Builds the filesystem server from the helpers: the files toolset, file resources, roots and the watcher."""

from __future__ import annotations

from mcp_server_core import ReferenceServer
from mcp_server_core.conventions.places import Place

from mcp_server_filesystem import __version__
from mcp_server_filesystem.resources import FileProvider, announce, uri_path, watch_roots
from mcp_server_filesystem.roots import ClientRoots
from mcp_server_filesystem.sandbox import Sandbox
from mcp_server_filesystem.settings import FilesystemSettings
from mcp_server_filesystem.tools import Workspace, files_toolset, folders_of

INSTRUCTIONS = (
    "Files under the allowed roots; show_tree without a path shows them. Paths are absolute or relative to the "
    "first root. show_tree or find_files to orient, search_text to find code, read_file by line range, "
    "edit_file for changes (exact old_text), write_file for whole files."
)


def build_server(settings: FilesystemSettings) -> ReferenceServer:
    base = Sandbox([str(root) for root in settings.roots])
    roots = ClientRoots(base, allow_outside=settings.allow_roots_outside)
    workspace = Workspace(base, roots)
    server = ReferenceServer(
        "filesystem",
        version=__version__,
        instructions=INSTRUCTIONS,
        toolsets=[files_toolset(workspace)],
        enabled_toolsets=settings.toolsets,
        read_only=settings.read_only,
    )
    # Before the SDK's handlers, after the hub's tracking: roots/list_changed marks the session's roots stale.
    server._mcp_server.middleware.insert(1, roots.middleware)
    workspace.on_change = lambda path, listing: announce(server.changes, [path], listing=listing)

    server.add_provider(FileProvider(base, workspace.sandbox, listed=settings.listed_resources))
    folder_read = folders_of(workspace, "path")

    async def file_read(uri: str) -> list[Place]:
        """A file read as a resource reads its root, as read_file of the same path does (the helpers' flows.py)."""
        path = uri_path(uri)
        return await folder_read({"path": path}) if path is not None else []

    server.flows.resources_read("file:", file_read)
    if settings.watch and base.roots:
        server.run_in_background(watch_roots(server.changes, base.roots))
    return server
