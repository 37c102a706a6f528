"""A tiny server built from the helpers alone, so the helpers are tested without any domain."""

from __future__ import annotations

from typing import Annotated

import pytest
from mcp_server_core import InvalidArgument, ReferenceServer, Rendered, Toolset, register_secret
from pydantic import Field

SECRET = "hunter2-the-password"
register_secret(SECRET)


class Sum(Rendered):
    total: int
    parts: list[int]

    def render(self) -> str:
        return f"{' + '.join(map(str, self.parts))} = {self.total}"


def arithmetic() -> Toolset:
    toolset = Toolset("arithmetic", "Sums")

    @toolset.tool(title="Add numbers", read_only=True, open_world=False)
    def add_numbers(a: Annotated[int, Field(ge=0, le=10)], b: int = 1) -> Sum:
        """Use to add two small numbers."""
        return Sum(total=a + b, parts=[a, b])

    @toolset.tool(title="Divide numbers", read_only=True, open_world=False)
    def divide_numbers(a: int, b: int) -> str:
        """Use to divide a by b."""
        if b == 0:
            raise InvalidArgument("Cannot divide by zero.", hint="Pass a non-zero b.")
        return str(a / b)

    @toolset.tool(title="Explode", read_only=True, open_world=False)
    def explode_now() -> str:
        """Use to test the masking of unexpected failures."""
        raise RuntimeError(f"connect failed: postgresql://admin:{SECRET}@db/prod")

    return toolset


def writing() -> Toolset:
    toolset = Toolset("writing", "Writes", default=False)

    @toolset.tool(title="Write thing", read_only=False, open_world=False, destructive=True)
    def write_thing(text: str) -> str:
        """Use to write a thing."""
        return f"wrote {len(text)}"

    return toolset


def build(**options: object) -> ReferenceServer:
    return ReferenceServer("test", version="1.0", toolsets=[arithmetic(), writing()], **options)  # type: ignore[arg-type]


@pytest.fixture
def server() -> ReferenceServer:
    return build()
