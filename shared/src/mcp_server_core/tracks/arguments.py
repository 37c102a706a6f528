"""How a tool's arguments are written on a command line: its argument model, each argument's kind and shape, the
one-line usage a skill shows. Shared by the command track (commands.py) and the skill (skills.py), which both
describe the same tools.
"""

from __future__ import annotations

import inspect
import json
import re
import warnings
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, create_model

from mcp_server_core.conventions.tools import ToolDefinition

__all__ = ["PAGING", "argument_kinds", "argument_model", "paging_of", "task_of", "usage_line"]


def argument_model(definition: ToolDefinition) -> type[BaseModel]:
    """A pydantic model of the tool's arguments: the same types, constraints and defaults as its inputSchema."""
    fields: dict[str, Any] = {}
    for name, parameter in inspect.signature(definition.fn, eval_str=True).parameters.items():
        default = ... if parameter.default is inspect.Parameter.empty else parameter.default
        fields[name] = (parameter.annotation, default)
    with warnings.catch_warnings():
        # An argument may share a BaseModel method's name (move_path's `copy`); this model only validates, and a
        # validated value is read back as an attribute, where the field wins over the method.
        warnings.filterwarnings("ignore", "Field name .* shadows an attribute", UserWarning)
        model: type[BaseModel] = create_model(f"{definition.name}_arguments", **fields)
    return model


def _option(name: str) -> str:
    return "--" + name.replace("_", "-")


def _kind(schema: dict[str, Any], definitions: dict[str, Any]) -> str:
    """How an argument is written on a command line: 'flag', 'list', 'json', 'scalar' or 'scalar-or-list'."""
    if "$ref" in schema:
        schema = definitions.get(schema["$ref"].rsplit("/", 1)[-1], {})
    variants = [v for v in schema.get("anyOf", [schema]) if v.get("type") != "null"]
    types = {v.get("type") for v in variants}
    if types == {"boolean"}:
        return "flag"
    arrays = [v for v in variants if v.get("type") == "array"]
    if any(v.get("type") == "object" or "$ref" in v for v in variants) or any(
        _kind(v.get("items", {}), definitions) != "scalar" for v in arrays
    ):
        return "json"
    if arrays:
        return "scalar-or-list" if len(variants) > len(arrays) else "list"
    return "scalar"


_SCALARS = {"string": "str", "integer": "int", "number": "num", "boolean": "bool", "null": "null"}


def _shape(schema: dict[str, Any], definitions: dict[str, Any], depth: int = 0) -> str:
    """A JSON argument's shape in few tokens, `[{"old_text":str,"new_text":str,"count"?:int}]`: without it a
    command line (a Skill's line, `--help`) says only "JSON", where the MCP track shows the whole schema."""
    if "$ref" in schema:
        schema = definitions.get(schema["$ref"].rsplit("/", 1)[-1], {})
    if depth > 3:
        return "…"
    if "enum" in schema:
        return "|".join(json.dumps(value) for value in schema["enum"])
    variants = schema.get("anyOf")
    if variants:
        return "|".join(_shape(v, definitions, depth + 1) for v in variants if v.get("type") != "null")
    kind = schema.get("type")
    if kind == "array":
        return f"[{_shape(schema.get('items', {}), definitions, depth + 1)}]"
    if kind == "object" and "properties" not in schema:  # a mapping: {"name": value, ...}
        values = schema.get("additionalProperties")
        return f"{{str:{_shape(values if isinstance(values, dict) else {}, definitions, depth + 1)}}}"
    if kind == "object" or "properties" in schema:
        required = set(schema.get("required", []))
        fields = (
            f'"{name}"{"" if name in required else "?"}:{_shape(prop, definitions, depth + 1)}'
            for name, prop in schema.get("properties", {}).items()
        )
        return "{" + ",".join(fields) + "}"
    return _SCALARS.get(str(kind), "any")


@dataclass(frozen=True)
class _Argument:
    """One of a tool's arguments as a command line writes it, read once from its input schema."""

    name: str
    kind: str
    required: bool
    help: str
    choices: list[Any] | None
    shape: str = ""
    """A JSON argument's shape (`_shape`); empty for the others."""

    @property
    def metavar(self) -> str:
        return f"'{self.shape}'" if self.kind == "json" else self.name.upper()

    @property
    def repeated(self) -> bool:
        return self.kind in ("list", "scalar-or-list")


def _arguments_of(model: type[BaseModel]) -> list[_Argument]:
    schema = model.model_json_schema()
    definitions = schema.get("$defs", {})
    required = schema.get("required", [])
    found = []
    for name, prop in schema.get("properties", {}).items():
        described = prop.get("description") or next(
            (v.get("description") for v in prop.get("anyOf", []) if v.get("description")), None
        )
        help_text = described or ""
        if "default" in prop and prop["default"] is not None:
            help_text += f" (default {json.dumps(prop['default'])})"
        kind = _kind(prop, definitions)
        shape = _shape(prop, definitions) if kind == "json" else ""
        if shape:
            help_text = f"JSON {shape}" + (f"; {help_text}" if help_text else "")
        found.append(_Argument(name, kind, name in required, help_text.strip(), prop.get("enum"), shape))
    return found


PAGING = ("limit", "cursor")
"""The family's paging pair, said once in a skill rather than on every listing's line."""


def argument_kinds(definition: ToolDefinition) -> set[str]:
    """How the tool's arguments are written ('flag', 'list', 'json', ...), with 'paging' for the paging pair: what
    a skill must explain about them, and no more."""
    arguments = _arguments_of(argument_model(definition))
    return {"paging" if a.name in PAGING else a.kind for a in arguments}


def paging_of(definition: ToolDefinition) -> tuple[str, ...]:
    """Which of the paging pair the tool takes, in the pair's order: a skill names the commands that page, so that
    no `--limit` is tried on one that has none."""
    names = {a.name for a in _arguments_of(argument_model(definition))}
    return tuple(name for name in PAGING if name in names)


def usage_line(definition: ToolDefinition) -> str:
    """How to call the tool, in few tokens: `call NAME REQUIRED... [--option V]`, the paging pair left out."""
    words = ["call", definition.name]
    for argument in _arguments_of(argument_model(definition)):
        if argument.required:
            words.append(f"{argument.metavar}..." if argument.repeated else argument.metavar)
        elif argument.name in PAGING:
            continue
        elif argument.kind == "flag":
            words.append(f"[{_option(argument.name)}]")
        else:
            words.append(f"[{_option(argument.name)} {argument.metavar if argument.kind == 'json' else 'V'}]")
    return " ".join(words)


def task_of(summary: str) -> str:
    """A tool's summary as a list of commands says it: every first sentence opens "Use to" for a model choosing
    among MCP tools; in a list that is all commands the two words say nothing ("Use first to" keeps "first")."""
    return re.sub(r"^Use (?:(\w+) )?to ", lambda used: f"{used[1]}: " if used[1] else "", summary)
