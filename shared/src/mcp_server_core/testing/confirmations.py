"""A user at the other end of the confirmation of cross writes (protocol/flows.py), for tests through fastmcp's
Client: `Client(server, elicitation_handler=Asked("decline"))`, then check what it was asked."""

from __future__ import annotations

from typing import Any

from fastmcp.client.elicitation import ElicitResult

__all__ = ["Asked"]


class Asked:
    """An elicitation handler that gives one answer (`accept`, `decline` or `cancel`; an accept ticks the box
    with `value`) and keeps every question it was asked, in order."""

    def __init__(self, action: str, value: bool = True) -> None:
        self.action = action
        self.value = value
        self.messages: list[str] = []

    async def __call__(self, message: str, response_type: Any, params: Any, context: Any) -> Any:
        self.messages.append(message)
        if self.action == "accept":
            return ElicitResult(action="accept", content={"value": self.value})
        return ElicitResult(action=self.action)
