"""Builds the template server from the helpers: toolsets, resources, a prompt, change notifications."""

from __future__ import annotations

from fastmcp.prompts import Message
from fastmcp.resources import FunctionResource, ResourceTemplate
from mcp_server_core import ReferenceServer

from mcp_server_template import __version__
from mcp_server_template.notes import NoteStore, notes_toolset
from mcp_server_template.settings import TemplateSettings

INSTRUCTIONS = "Notes kept as text files. list_notes or search_notes first, then read_note; write_note replaces."


def build_server(settings: TemplateSettings) -> ReferenceServer:
    store = NoteStore(settings.notes_dir)
    toolsets = [notes_toolset(store)]
    if settings.conformance:
        from mcp_server_template.conformance import conformance_toolset

        toolsets.append(conformance_toolset())
    server = ReferenceServer(
        "template",
        version=__version__,
        instructions=INSTRUCTIONS,
        toolsets=toolsets,
        enabled_toolsets=settings.toolsets or ("all" if settings.conformance else None),
        read_only=settings.read_only,
    )

    def note_resource(name: str) -> FunctionResource:
        return FunctionResource.from_function(
            lambda: store.read(name),
            uri=f"note://{name}",
            name=name,
            title=f"Note {name}",
            description=f"The text of note {name}",
            mime_type="text/plain",
        )

    for name in store.names():
        server.add_resource(note_resource(name))
    server.add_template(
        ResourceTemplate.from_function(
            store.read,
            uri_template="note://{name}",
            name="note",
            title="Note by name",
            description="The text of any note",
            mime_type="text/plain",
        )
    )

    def on_change(what: str, name: str) -> None:
        uri = f"note://{name}"
        if what == "created":
            server.add_resource(note_resource(name))
            server.changes.resources_changed()
        elif what == "deleted":
            server.local_provider.remove_resource(uri)
            server.changes.resources_changed()
        server.changes.resource_updated(uri)

    store.listener = on_change

    @server.prompt(title="Summarize notes", description="Ask for a summary of the notes about a topic")
    def summarize_notes(topic: str) -> list[Message]:
        return [
            Message(
                f"Search my notes for {topic!r} with search_notes, read the notes that match, "
                "and summarize what they say in five bullet points, naming each note you used."
            )
        ]

    if settings.conformance:
        from mcp_server_template.conformance import add_conformance_fixtures

        add_conformance_fixtures(server)
    return server


from mcp_server_template.spec import SPEC, add_arguments  # noqa: E402 - kept importable from here

__all__ = ["SPEC", "add_arguments", "build_server"]
