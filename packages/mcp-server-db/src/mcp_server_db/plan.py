"""What a PostgreSQL plan will run, read from `EXPLAIN (VERBOSE, FORMAT JSON)`: its nodes, the relations it scans
and the functions its expressions call, for `Database.check_plan`.

The plan is what the executor runs once views are expanded, partitions and inheritance children added, SQL
functions inlined and row-level policies applied: names the statement's text never holds (a view's
`pg_terminate_backend(pid)`, a partition that is a foreign table). VERBOSE shows every expression as SQL, each
function by its name, qualified by its schema where the search path would not find it: a name is judged by
every function it can name (`Database.check_plan`). What the text of a plan cannot show (a cast applied
implicitly, a domain's CHECK) is judged from the catalog before planning (`Database.check_statement`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, NamedTuple

from mcp_server_core import Refused

__all__ = ["PlanFacts", "plan_facts"]

SAFE_NODES = frozenset(
    [
        "Result", "ProjectSet", "Append", "Merge Append", "Recursive Union", "BitmapAnd", "BitmapOr", "Nested Loop",
        "Merge Join", "Hash Join", "Seq Scan", "Sample Scan", "Gather", "Gather Merge", "Index Scan",
        "Index Only Scan", "Bitmap Index Scan", "Bitmap Heap Scan", "Tid Scan", "Tid Range Scan", "Subquery Scan",
        "Function Scan", "Table Function Scan", "Values Scan", "CTE Scan", "Named Tuplestore Scan",
        "WorkTable Scan", "Materialize", "Memoize", "Sort", "Incremental Sort", "Group", "Aggregate", "WindowAgg",
        "Unique", "SetOp", "Limit", "Hash",
    ]
)  # fmt: skip
"""PostgreSQL's own plan nodes that only read. Not among them: Foreign Scan (a wrapper reads files, runs programs
or asks other servers), Custom Scan (an extension's executor), ModifyTable and LockRows (writes and locks)."""

_WHY_NOT = {
    "Foreign Scan": "a foreign table, whose wrapper reads files, runs programs or asks other servers at every read",
    "Custom Scan": "an extension's own executor, which this server cannot judge",
    "ModifyTable": "a write",
    "LockRows": "row locks",
}


class PlanFacts(NamedTuple):
    relations: frozenset[tuple[str, str]]
    """(schema, name) of every relation the plan scans."""
    functions: frozenset[tuple[str, str]]
    """(schema or "", name) of every function its expressions call, as EXPLAIN writes them."""


def plan_facts(explained: Any) -> PlanFacts:
    """The facts of an `EXPLAIN (VERBOSE, FORMAT JSON)` answer; a `Refused` for a node that is not a read, or for
    an answer that does not read as a plan (the statement then does not run: a plan not judged is not run)."""
    try:
        roots = [entry["Plan"] for entry in explained]
    except (TypeError, KeyError):
        raise _unreadable() from None
    relations: set[tuple[str, str]] = set()
    functions: set[tuple[str, str]] = set()
    for node in _nodes(roots):
        kind = node.get("Node Type")
        if kind not in SAFE_NODES:
            why = _WHY_NOT.get(str(kind), "a step this server does not know to only read")
            raise Refused(
                f"Refused: the plan of this statement holds a {kind} node: {why}"
                + (f" ({node.get('Schema')}.{node.get('Relation Name')})" if node.get("Relation Name") else "")
                + ". Only reads of the database's own tables run here.",
                hint="Query other tables (a foreign table can be reached through a parent table or a view).",
            )
        if "Relation Name" in node:
            relations.add((str(node.get("Schema", "")), str(node["Relation Name"])))
        for key, value in node.items():
            if key != "Plans":
                functions |= set(_calls(value))
    return PlanFacts(frozenset(relations), frozenset(functions))


def _unreadable() -> Refused:
    return Refused(
        "Refused: the database's plan for this statement could not be read, and a statement whose plan is not "
        "judged does not run here.",
        hint="Try a simpler statement; if this persists, report the PostgreSQL version.",
    )


def _nodes(plans: list[Any]) -> Iterator[dict[str, Any]]:
    """Every node, subplans and init plans included (EXPLAIN lists them under Plans, named by Subplan Name)."""
    stack = list(plans)
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            raise _unreadable()
        yield node
        stack.extend(node.get("Plans", []))


def _calls(value: Any) -> Iterator[tuple[str, str]]:
    if isinstance(value, list):
        for item in value:
            yield from _calls(item)
    elif isinstance(value, str) and "(" in value:
        yield from _called_names(value)


def _called_names(expression: str) -> Iterator[tuple[str, str]]:
    """Each `name(` and `schema.name(` in SQL as PostgreSQL's deparser writes it, quoted or not, outside string
    literals (a space before the parenthesis is allowed: more names judged, none missed). An unquoted name with
    capitals is a keyword (COALESCE, EXTRACT, CASE): the deparser quotes a function name unless it is lowercase."""
    tokens: list[tuple[str, str]] = []  # ("name", text), ("quoted", text), (".", ""), ("(", ""), ("other", "")
    for match in _TOKEN.finditer(expression):
        literal, quoted, name, punctuation = match.groups()
        if quoted is not None:
            tokens.append(("quoted", quoted.replace('""', '"')))
        elif name is not None:
            tokens.append(("name", name))
        elif punctuation in (".", "("):
            tokens.append((punctuation, ""))
        elif literal is not None or not punctuation.isspace():
            tokens.append(("other", ""))
    for index, (kind, _) in enumerate(tokens):
        if kind != "(" or index == 0 or tokens[index - 1][0] not in ("name", "quoted"):
            continue
        what, name = tokens[index - 1]
        if what == "name" and name != name.lower():
            continue
        schema = ""
        if index >= 3 and tokens[index - 2][0] == "." and tokens[index - 3][0] in ("name", "quoted"):
            schema = tokens[index - 3][1]
        yield schema, name


# A string literal ('' inside it is a quote; E'...' escapes backslashes), a quoted name, a plain name, or one
# other character (spaces are dropped, so `name (` is a call too).
_TOKEN = re.compile(
    r"((?<![A-Za-z0-9_$])[eE]'(?:[^'\\]|\\.|'')*'|'(?:[^']|'')*')"
    r'|"((?:[^"]|"")*)"'
    r"|([A-Za-z_][A-Za-z0-9_$]*)"
    r"|(.)",
    re.DOTALL,
)
