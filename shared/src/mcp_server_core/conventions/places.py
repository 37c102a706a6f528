"""Where a tool's content comes from and where its writes land: the vocabulary of cross-write confirmation.

A tool declares, beside its annotations, the place a call reads (`reads=`) and the place it writes (`writes=`),
each a function of the call's arguments: `tool(..., writes=places_of("repository", "repo"))`. A server's
resources declare the place a read of them reads the same way, as a function of the URI (`ResourcePlaceOf`,
given to `server.flows.resources_read(...)`): reading a file as a resource is reading its folder, as read_file
is. The protocol room (protocol/flows.py) remembers what a session read and asks the user before a write lands
anywhere else. Only the vocabulary lives here, so a tool's declaration needs neither fastmcp nor the protocol.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mcp_server_core.conventions.untrusted import one_line

__all__ = ["Place", "PlaceOf", "Places", "ResourcePlaceOf", "place_of"]


@dataclass(frozen=True)
class Place:
    """One place content is read from or written to: a repository, a channel, a folder.

    Two places are the same when their kind and key are (`C0123ABCD` however the channel was named); `label` is
    how the user is shown it (`#general`), and the allow-list (`--allow-writes-to`) matches key or label.
    """

    kind: str
    key: str
    label: str = field(default="", compare=False)

    def __str__(self) -> str:
        shown = self.label or self.key
        return f"{self.kind} {one_line(shown, 200)}"

    def named(self, entry: str) -> bool:
        """Whether an allow-list entry names this place (by key or label, case aside: GitHub's and Slack's names
        are case-insensitive; a folder's key is its real path, which an entry must spell exactly)."""
        if self.kind == "folder":
            return entry.rstrip("/") == self.key.rstrip("/") or entry == self.key
        wanted = entry.strip().lstrip("#").casefold()
        return wanted in (self.key.casefold(), self.label.lstrip("#").casefold())


Places = Place | Sequence[Place] | None
PlaceOf = Callable[[Mapping[str, Any]], Places | Awaitable[Places]]
"""A declaration: the call's arguments (as the client sent them) to its place(s); None when the arguments name none
(the tool then refuses the call itself: an argument that names no place fails its own checks)."""
ResourcePlaceOf = Callable[[str], Places | Awaitable[Places]]
"""A resource's declaration: the URI read to its place(s); None when the URI names none (a directory of names, or a
URI the read itself will refuse)."""


def place_of(kind: str, argument: str) -> PlaceOf:
    """The common declaration: the place is the value of one argument, as given (`place_of("repository", "repo")`).
    A value that is not text is still a place (its repr): an odd argument asks more, never less."""

    def declared(arguments: Mapping[str, Any]) -> Place | None:
        value = arguments.get(argument)
        if value is None:
            return None
        return Place(kind, value if isinstance(value, str) else repr(value))

    return declared
