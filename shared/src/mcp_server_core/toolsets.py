"""Named groups of tools, switched on and off at run time; each switch sends tools/list_changed.

The user picks toolsets at start (`--toolsets repos,issues`, `all`, `default`); a server may also switch one
at run time (a discovery tool, a permission that arrived). Tools that write are never registered on a
read-only server: absent, not merely refused, so they cost no context.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from mcp_server_core.conventions import ToolDefinition, tool
from mcp_server_core.errors import did_you_mean

if TYPE_CHECKING:
    from mcp_server_core.server import ReferenceServer

__all__ = ["Toolset", "Toolsets", "parse_toolsets"]


class Toolset:
    """A named group of tools, on by default unless `default=False`."""

    def __init__(self, name: str, description: str, *, default: bool = True) -> None:
        self.name = name
        self.description = description
        self.default = default
        self.tools: list[ToolDefinition] = []

    def tool(self, **conventions: Any) -> Callable[[Callable[..., Any]], ToolDefinition]:
        """`conventions.tool(...)`, registering the tool in this toolset."""

        def decorate(fn: Callable[..., Any]) -> ToolDefinition:
            definition = tool(**conventions)(fn)
            self.tools.append(definition)
            return definition

        return decorate

    def __repr__(self) -> str:
        return f"Toolset({self.name!r}, tools={[t.name for t in self.tools]})"


def parse_toolsets(spec: str | Iterable[str] | None, available: Sequence[Toolset]) -> list[str]:
    """Names from a `--toolsets` value: comma-separated names, `all`, `default`; none means `default`."""
    if spec is None:
        words = ["default"]
    elif isinstance(spec, str):
        words = [w.strip() for w in spec.split(",") if w.strip()]
    else:
        words = list(spec)
    known = {t.name for t in available}
    chosen: list[str] = []
    for word in words or ["default"]:
        if word == "all":
            names = [t.name for t in available]
        elif word == "default":
            names = [t.name for t in available if t.default]
        elif word in known:
            names = [word]
        else:
            raise ValueError(
                f"unknown toolset {word!r}. {did_you_mean(word, [*known, 'all', 'default'], noun='toolset')}"
            )
        chosen.extend(n for n in names if n not in chosen)
    return chosen


class Toolsets:
    """The toolsets of one server and which are on."""

    def __init__(self, server: ReferenceServer, available: Sequence[Toolset], *, read_only: bool) -> None:
        self._server = server
        self._available = {t.name: t for t in available}
        self._registered: dict[str, list[str]] = {}
        self.read_only = read_only

    @property
    def available(self) -> list[Toolset]:
        return list(self._available.values())

    @property
    def enabled(self) -> list[str]:
        return list(self._registered)

    def enable(self, name: str) -> bool:
        """Switch a toolset on; False if it already was. Clients hear tools/list_changed."""
        toolset = self._get(name)
        if name in self._registered:
            return False
        names = []
        for definition in toolset.tools:
            if self.read_only and not definition.read_only:
                continue
            self._server.add_tool(definition.build())
            names.append(definition.name)
        self._registered[name] = names
        self._server.changes.tools_changed()
        return True

    def disable(self, name: str) -> bool:
        """Switch a toolset off; False if it already was. Clients hear tools/list_changed."""
        self._get(name)
        if name not in self._registered:
            return False
        for tool_name in self._registered.pop(name):
            self._server.local_provider.remove_tool(tool_name)
        self._server.changes.tools_changed()
        return True

    def _get(self, name: str) -> Toolset:
        try:
            return self._available[name]
        except KeyError:
            raise ValueError(
                f"unknown toolset {name!r}. {did_you_mean(name, self._available, noun='toolset')}"
            ) from None
