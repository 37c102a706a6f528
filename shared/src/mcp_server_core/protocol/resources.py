"""`ResourceSet`: many concrete resources that come and go (tables, channels), served in linear time.

fastmcp's local provider (`server.add_resource`) checks each new component against every one it already
holds (fastmcp 4.2.3, `LocalProvider._check_version_mixing`), so registering n resources one by one costs
O(n²): 5,000 tables took 16 s to start, and each one added or removed later costs a scan of them all. A
`ResourceSet` is a fastmcp Provider keyed by URI: adding, removing and looking up a resource is a dict
operation, listing is one pass. Clients see the same resources/list and resources/read either way.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from fastmcp.resources import Resource
from fastmcp.server.providers import Provider
from fastmcp.utilities.versions import VersionSpec

__all__ = ["ResourceSet"]


class ResourceSet(Provider):
    """Concrete resources by URI; add it to a server with `server.add_provider(resource_set)`.

    Updates swap in a new mapping, so they are safe from any thread (a poller's worker thread) while the
    event loop lists or reads: a request sees the set before an update or after it, never half of it.
    Announcing the change (`server.changes.resources_changed()`) stays with the caller, who knows why.
    """

    def __init__(self, resources: Iterable[Resource] = ()) -> None:
        super().__init__()
        self._by_uri: dict[str, Resource] = {str(r.uri): r for r in resources}

    def update(self, *, add: Iterable[Resource] = (), remove: Iterable[str] = ()) -> None:
        """Add (or replace, by URI) `add` and drop the URIs in `remove`: O(size + changes), in one swap."""
        added = {str(r.uri): r for r in add}
        removed = set(remove)
        if not added and not removed:
            return
        by_uri = {uri: r for uri, r in self._by_uri.items() if uri not in removed}
        by_uri.update(added)
        self._by_uri = by_uri

    def __len__(self) -> int:
        return len(self._by_uri)

    def __contains__(self, uri: object) -> bool:
        return uri in self._by_uri

    def __repr__(self) -> str:
        return f"ResourceSet({len(self._by_uri)} resources)"

    async def _list_resources(self) -> Sequence[Resource]:
        return list(self._by_uri.values())

    async def _get_resource(self, uri: str, version: VersionSpec | None = None) -> Resource | None:
        found = self._by_uri.get(uri)
        if found is None or (version is not None and not version.matches(found.version)):
            return None
        return found
