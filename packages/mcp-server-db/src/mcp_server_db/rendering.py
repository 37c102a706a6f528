"""How described tables and values read: the models describe_tables fills, their DDL-like text, and one value as a
result cell or as JSON. No SQLAlchemy here: the tools' results import this at start, the engine only at first use.

Everything the database holds is someone else's words: table, column and index names, types, defaults, checks,
comments and cells. The text shows each in its one-line form (`Untrusted`: newlines, controls, bidi and invisible
characters escaped), so no name or value can start a line of its own; a cell is a data value and its structured
content keeps it as the database gave it (JSON escapes what it must), names are one-lined there too. A page of
rows holds the columns and rows whose text and JSON fit its budget (`page_rows`), the same in both."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from mcp_server_core import Untrusted, one_line
from mcp_server_core.conventions.budget import json_size
from pydantic import BaseModel

__all__ = [
    "CELL_CHARS",
    "VALUE_BYTES",
    "VALUE_CHARS",
    "ColumnInfo",
    "CutValue",
    "ForeignKey",
    "IndexInfo",
    "RowPage",
    "TableInfo",
    "cell",
    "columns_text",
    "cut_value",
    "json_value",
    "names_in_line",
    "page_rows",
    "was_cut",
]

CELL_CHARS = 200
VALUE_CHARS = 1_000
"""The longest text value a structured result carries; longer ones are cut with a marker saying how long."""
VALUE_BYTES = 4 * VALUE_CHARS
"""The largest value the engine sends whole: a longer one has over VALUE_CHARS characters, and is cut anyway."""


class CutValue(str):
    """A value the database cut before sending it, already as its marker (what `cut_value` would make of it)."""


class ColumnInfo(BaseModel):
    name: str
    type: str
    nullable: bool
    default: str | None = None
    comment: str | None = None


class ForeignKey(BaseModel):
    columns: list[str]
    ref_table: str
    ref_columns: list[str]


class IndexInfo(BaseModel):
    name: str
    columns: list[str]
    unique: bool


class TableInfo(BaseModel):
    name: str
    kind: str
    comment: str | None = None
    more_columns: int | None = None
    """Columns left out (with their sample values) to fit the answer's budget."""
    columns: list[ColumnInfo]
    primary_key: list[str] = []
    foreign_keys: list[ForeignKey] = []
    referenced_by: list[ForeignKey] = []
    indexes: list[IndexInfo] = []
    unique: list[list[str]] = []
    checks: list[str] = []
    row_estimate: int | None = None
    sample: list[list[Any]] | None = None

    def render(self) -> str:
        """Flat and DDL-like, as `.schema` reads: what concerns one column on its line (its key, uniqueness and
        reference), each constraint over several columns on a line of its own. Index names are left out (what a
        query needs is which columns are indexed; find_objects lists the names)."""
        head = f"{self.kind.upper()} {identifier(self.name)}"
        head += f" (~{self.row_estimate} rows)" if self.row_estimate is not None else ""
        head += f" -- {Untrusted(self.comment)}" if self.comment else ""
        lines = [head]
        key = self.primary_key[0] if len(self.primary_key) == 1 else None
        unique = {u[0] for u in self.unique if len(u) == 1}
        references: dict[str, list[str]] = {}
        for f in self.foreign_keys:
            if len(f.columns) == 1:
                references.setdefault(f.columns[0], []).append(
                    f"{identifier(f.ref_table)}({identifier(f.ref_columns[0])})"
                )
        for c in self.columns:
            line = f"{identifier(c.name)} {Untrusted(c.type)}"
            line += " NOT NULL" if not c.nullable and c.name != key else ""
            line += f" DEFAULT {Untrusted(c.default)}" if c.default is not None else ""
            line += " PRIMARY KEY" if c.name == key else ""
            line += " UNIQUE" if c.name in unique else ""
            line += "".join(f" REFERENCES {r}" for r in references.get(c.name, []))
            line += f" -- {Untrusted(c.comment)}" if c.comment else ""
            lines.append(line)
        if self.more_columns:
            lines.append(f"({self.more_columns:,} more columns not shown: find_objects lists a table's columns)")
        if len(self.primary_key) > 1:
            lines.append(f"PRIMARY KEY ({names_in_line(self.primary_key)})")
        lines += [
            f"FOREIGN KEY ({names_in_line(f.columns)}) REFERENCES {identifier(f.ref_table)}"
            f"({names_in_line(f.ref_columns)})"
            for f in self.foreign_keys
            if len(f.columns) > 1
        ]
        lines += [f"UNIQUE ({names_in_line(u)})" for u in self.unique if len(u) > 1]
        lines += [f"CHECK ({Untrusted(c)})" for c in self.checks]
        if self.referenced_by:
            lines.append(
                "REFERENCED BY "
                + ", ".join(f"{identifier(f.ref_table)}({names_in_line(f.columns)})" for f in self.referenced_by)
            )
        # A unique index that only backs the primary key or a UNIQUE constraint says nothing new.
        stated = [self.primary_key, *self.unique]
        for flag, word in ((False, "INDEX"), (True, "UNIQUE INDEX")):
            shown = [
                f"({names_in_line(i.columns)})" for i in self.indexes if i.unique is flag and i.columns not in stated
            ]
            if shown:
                lines.append(f"{word} {', '.join(shown)}")
        if self.sample is not None:
            lines.append(f"sample ({len(self.sample)} rows):")
            lines.append("\t".join(one_line(c.name) for c in self.columns))  # a header, as run_query's
            lines += ["\t".join(cell(v) for v in row) for row in self.sample]
        return "\n".join(lines)


_PLAIN_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*(?:\.[A-Za-z_][A-Za-z0-9_$]*)?")
"""A plain name, or a schema's table as the tools name it (`sales.orders`)."""


def identifier(name: str) -> str:
    """A name as DDL shows it: its one-line form, in double quotes (inner ones doubled, as SQL writes them) unless
    it is a plain identifier, so a column named `x TEXT PRIMARY KEY` cannot pass for a key the table has."""
    shown = one_line(name)
    return shown if _PLAIN_IDENTIFIER.fullmatch(shown) else '"' + shown.replace('"', '""') + '"'


def names_in_line(names: Iterable[str], separator: str = ", ") -> str:
    """Names from the database as the server's DDL-like text lists them (`identifier`)."""
    return separator.join(identifier(name) for name in names)


def cell(value: Any) -> str:
    """One value as a table cell: NULL spelled out, any other in its one-line form (a tab, a newline, a control
    or bidi character escaped, so no value can start a line or a column of its own), long text cut."""
    if value is None:
        return "NULL"
    return one_line(value if type(value) is str else str(value), CELL_CHARS)


@dataclass
class RowPage:
    """The rows of a result that fit one answer, and the columns they show."""

    columns: list[str]
    """The columns shown, each in its one-line form."""
    rows: list[list[Any]] = field(default_factory=list)
    """Values for structured content (`json_value`), as many as `columns`."""
    lines: list[str] = field(default_factory=list)
    """Each row as its text line."""
    more_rows: bool = False
    more_columns: int = 0
    cut_values: bool = False


def _columns_within(names: Sequence[str], values: Sequence[Any], budget: int) -> int:
    """How many leading columns of the first row fit `budget` as text (name and cell) and as JSON (name and
    value) alike: at least one."""
    text = structure = 0
    for index, (name, value) in enumerate(zip(names, values, strict=True)):
        named = json_size(name) + 1
        text += named + json_size(cell(value)) + 1
        structure += named + json_size(value) + 1
        if text > budget or structure > budget:
            return max(index, 1)
    return len(names)


def page_rows(names: Sequence[object], rows: Iterable[Sequence[Any]], budget: int, max_rows: int) -> RowPage:
    """The rows of `rows` (read lazily: the rest is never fetched) that fit `budget` bytes as text and as JSON
    each, header included, up to `max_rows`. The columns are those of the first row that fit the budget (a row
    of 1,663 columns of 999 characters shows the first few and says how many more there are); at least one row
    is kept, so a page makes progress."""
    columns = [one_line(str(name)) for name in names]
    page = RowPage(columns=columns)
    shown: int | None = None
    text_used = structured_used = 0
    for row in rows:
        if len(page.rows) == max_rows:
            page.more_rows = True
            break
        values = [json_value(v) for v in row]
        if shown is None:
            shown = _columns_within(columns, values, budget)
            page.columns = columns[:shown]
            page.more_columns = len(columns) - shown
            text_used = json_size("\t".join(page.columns)) + 1
            structured_used = json_size(page.columns)
        values = values[:shown]
        line = "\t".join([cell(v) for v in values])
        text_used += json_size(line) + 1
        structured_used += json_size(values) + 1
        if page.rows and (text_used > budget or structured_used > budget):
            page.more_rows = True
            break
        page.cut_values = page.cut_values or any(was_cut(v) for v in values)
        page.rows.append(values)
        page.lines.append(line)
    if shown is None:  # no rows: the header alone is bounded too
        shown = _columns_within(columns, [None] * len(columns), budget)
        page.columns, page.more_columns = columns[:shown], len(columns) - shown
    return page


_PLAIN = frozenset({bool, int, float, str})


def json_value(value: Any) -> Any:
    """A value for structured content: JSON's own types as they are, text cut at `VALUE_CHARS`, bytes by size."""
    if type(value) is CutValue:
        return str(value)
    if value is None or type(value) in _PLAIN or isinstance(value, bool | int | float):
        return value if type(value) is not str or len(value) <= VALUE_CHARS else cut_value(value)
    if isinstance(value, str):
        return value if len(value) <= VALUE_CHARS else cut_value(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return f"<{len(bytes(value))} bytes>"
    shown = str(value)
    return shown if len(shown) <= VALUE_CHARS else cut_value(shown)


def cut_value(value: str) -> str:
    return f"{value[:VALUE_CHARS]}…[cut: {len(value):,} chars]"


def was_cut(value: Any) -> bool:
    return type(value) is str and len(value) > VALUE_CHARS and value.endswith(" chars]") and "…[cut: " in value


COLUMNS_TEXT_CHARS = 2_000
"""The longest list of columns one object's line shows (find_objects' full detail, the schema overview)."""


def columns_text(columns: list[Any]) -> str:
    """A table's columns as `name type, ...`, each part in its one-line form, cut at `COLUMNS_TEXT_CHARS` with
    the count of the whole."""
    shown: list[str] = []
    used = 0
    for c in columns:
        part = f"{Untrusted(str(c['name']))} {Untrusted(str(c['type']))}"
        used += len(part) + 2
        if used > COLUMNS_TEXT_CHARS:
            shown.append(f"… {len(columns) - len(shown):,} more")
            break
        shown.append(part)
    return ", ".join(shown)
