"""Files as MCP resources (`file://` URIs), and the watcher that tells subscribers when they change.

resources/list shows a bounded sample of the files under the roots (sorted, .gitignore-aware, no hidden
files); any file under the roots can be read through the `file:///{path}` template. Reads go through the
session's sandbox like every tool. The watcher (watchfiles) sends `notifications/resources/updated` for
subscribed files that changed on disk and `notifications/resources/list_changed` when files appear or go;
the hub debounces both.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import quote, unquote_to_bytes, urlsplit

import anyio.to_thread
from fastmcp.resources import Resource, ResourceTemplate
from fastmcp.resources.base import ResourceResult
from fastmcp.server.providers import Provider
from fastmcp.utilities.versions import VersionSpec
from mcp_server_core import InvalidArgument, NotFound, ToolFailure
from mcp_server_core.protocol.notifications import ChangeHub
from pydantic import PrivateAttr

from mcp_server_filesystem.reading import decode_text, media_type, sniff_binary
from mcp_server_filesystem.sandbox import TEMP_SUFFIX, Location, Sandbox
from mcp_server_filesystem.walk import WalkOptions, walk

__all__ = ["FileProvider", "announce", "file_uri", "uri_path", "watch_roots"]

logger = logging.getLogger(__name__)

MAX_RESOURCE_BYTES = 10 * 1024 * 1024

SandboxFor = Callable[[], Any]
"""An async callable returning the current request's Sandbox."""


def file_uri(real_path: str) -> str:
    # The path's bytes, percent-encoded: names that are not UTF-8 survive the round trip.
    return "file://" + quote(os.fsencode(real_path))


def uri_path(uri: str) -> str | None:
    """The absolute path a file:// URI names (None for any other URI)."""
    parts = urlsplit(uri)
    if parts.scheme != "file" or parts.netloc not in ("", "localhost"):
        return None
    path = os.fsdecode(unquote_to_bytes(parts.path))
    return os.path.normpath(path) if path.startswith("/") else None


def _read(box: Sandbox, path: str) -> str | bytes:
    location = box.locate(path)
    data = box.read_bytes(location, MAX_RESOURCE_BYTES + 1)
    if len(data) > MAX_RESOURCE_BYTES:
        raise InvalidArgument(
            f"{location.shown!r} is over {MAX_RESOURCE_BYTES:,} bytes; read it by range with read_file."
        )
    if sniff_binary(data[:8192]):
        return data
    return decode_text(data).text


def _mime(box: Sandbox, location: Location) -> str:
    # Through the sandbox: a FIFO named by a URI is refused here instead of blocking the event loop on open().
    try:
        with box.open_file(location) as (fd, _info):
            head = os.pread(fd, 64, 0)
    except (ToolFailure, OSError):
        return "application/octet-stream"
    return media_type(head, location.name) or "text/plain"


class FileResource(Resource):
    """One file under the roots."""

    real_path: str = ""
    _sandbox_for: SandboxFor | None = PrivateAttr(default=None)

    async def read(self) -> str | bytes | ResourceResult:
        assert self._sandbox_for is not None
        box = await self._sandbox_for()
        try:
            return await anyio.to_thread.run_sync(_read, box, self.real_path)
        except NotFound:
            raise  # the helpers answer it as -32602 with the URI, like any unknown resource
        except ToolFailure as exc:
            from fastmcp.exceptions import ResourceError

            raise ResourceError(str(exc)) from None


class FileTemplate(ResourceTemplate):
    """`file:///{path*}`: any file under the roots, by absolute path."""

    _make: Callable[[str], FileResource | None] | None = PrivateAttr(default=None)

    async def create_resource(self, uri: str, params: dict[str, Any]) -> Resource:
        assert self._make is not None
        resource = self._make(uri)
        if resource is None:
            raise NotFound(f"{uri!r} is not a file under the allowed roots.")
        return resource

    async def _read(self, uri: str, params: dict[str, Any]) -> ResourceResult:
        resource = await self.create_resource(uri, params)
        return self.convert_result(await resource.read())


class FileProvider(Provider):
    """Resources computed from the disk when asked, never registered one by one."""

    def __init__(self, base: Sandbox, sandbox_for: SandboxFor, *, listed: int) -> None:
        super().__init__()
        self.base = base
        self.sandbox_for = sandbox_for
        self.listed = listed
        template = FileTemplate(
            uri_template="file:///{path*}",
            name="file",
            title="File by path",
            description="Any file under the allowed roots, by absolute path",
            mime_type="text/plain",
            parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
            security=None,  # the sandbox screens paths, with the roots' own rules
        )
        template._make = self._resource_for
        self.template = template

    def _resource_for(self, uri: str) -> FileResource | None:
        path = uri_path(uri)
        if path is None:
            return None
        try:
            location = self.base.locate(path)
            if not stat.S_ISREG(self.base.lstat(location).st_mode):
                return None
        except ToolFailure:
            return None
        resource = FileResource(
            uri=file_uri(location.path),
            name=location.shown,
            mime_type=_mime(self.base, location),
            real_path=location.path,
        )
        resource._sandbox_for = self.sandbox_for
        return resource

    async def _list_resources(self) -> Sequence[Resource]:
        box = await self.sandbox_for()
        return await anyio.to_thread.run_sync(self._listing, box)

    def _listing(self, box: Sandbox) -> list[Resource]:
        resources: list[Resource] = []
        for path in self._sample(box):
            resource = self._resource_for(file_uri(path))
            if resource is not None:
                resources.append(resource)
        return resources

    def _sample(self, box: Sandbox) -> list[str]:
        found: list[str] = []
        for root in box.roots:
            try:
                start = box.locate(root)
                for entry in walk(box, start, WalkOptions()):
                    if entry.kind == "file":
                        found.append(os.path.join(root, *entry.rel.split("/")))
                        if len(found) >= self.listed:
                            return found
            except ToolFailure:
                continue
        return found

    async def _get_resource(self, uri: str, version: VersionSpec | None = None) -> Resource | None:
        return await anyio.to_thread.run_sync(self._resource_for, uri)

    async def _list_resource_templates(self) -> Sequence[ResourceTemplate]:
        return [self.template]

    async def _get_resource_template(self, uri: str, version: VersionSpec | None = None) -> ResourceTemplate | None:
        # Only URIs under the roots match, so subscribing to a path outside them is "not found".
        path = uri_path(uri)
        if path is None:
            return None
        try:
            self.base.locate(path)
        except ToolFailure:
            return None
        return self.template


def announce(hub: ChangeHub, real_paths: Sequence[str], *, listing: bool) -> None:
    """Tell clients: the file set changed (`listing`), and each subscribed URI among `real_paths` changed."""
    if listing:
        hub.resources_changed()
    subscribed = hub.subscribed_uris
    if not subscribed:
        return
    changed = {os.path.normpath(p) for p in real_paths}
    for uri in subscribed:
        path = uri_path(uri)
        if path is not None and (path in changed or os.path.realpath(path) in changed):
            hub.resource_updated(uri)


def watch_roots(hub: ChangeHub, roots: Sequence[str], *, debounce_ms: int = 100) -> Callable[[], Any]:
    """A background job: watch the roots until cancelled, announcing what changes."""

    async def watch_files() -> None:
        from watchfiles import Change, DefaultFilter, awatch

        default = DefaultFilter()

        def keep(change: Change, path: str) -> bool:
            # A staging tree of a copy is hidden whole, not only its top: its files are not changes yet.
            return TEMP_SUFFIX + os.sep not in path and not path.endswith(TEMP_SUFFIX) and default(change, path)

        logger.debug("watching %s", roots)
        # Cancellation sets awatch's stop event, which the watcher thread polls every `step` ms.
        async for changes in awatch(*roots, watch_filter=keep, debounce=debounce_ms, step=50):
            listing = any(change in (Change.added, Change.deleted) for change, _ in changes)
            announce(hub, [path for _, path in changes], listing=listing)

    return watch_files
