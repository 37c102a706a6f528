"""How described tables and values read: the models describe_tables fills, their DDL-like text, and one value as a
result cell or as JSON. No SQLAlchemy here: the tools' results import this at start, the engine only at first use."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

__all__ = [
    "CELL_CHARS",
    "VALUE_BYTES",
    "VALUE_CHARS",
    "ColumnInfo",
    "CutValue",
    "ForeignKey",
    "IndexInfo",
    "TableInfo",
    "cell",
    "columns_text",
    "cut_value",
    "json_value",
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
        head = f"{self.kind.upper()} {self.name}"
        head += f" (~{self.row_estimate} rows)" if self.row_estimate is not None else ""
        head += f" -- {self.comment}" if self.comment else ""
        lines = [head]
        key = self.primary_key[0] if len(self.primary_key) == 1 else None
        unique = {u[0] for u in self.unique if len(u) == 1}
        references: dict[str, list[str]] = {}
        for f in self.foreign_keys:
            if len(f.columns) == 1:
                references.setdefault(f.columns[0], []).append(f"{f.ref_table}({f.ref_columns[0]})")
        for c in self.columns:
            line = f"{c.name} {c.type}"
            line += " NOT NULL" if not c.nullable and c.name != key else ""
            line += f" DEFAULT {c.default}" if c.default is not None else ""
            line += " PRIMARY KEY" if c.name == key else ""
            line += " UNIQUE" if c.name in unique else ""
            line += "".join(f" REFERENCES {r}" for r in references.get(c.name, []))
            line += f" -- {c.comment}" if c.comment else ""
            lines.append(line)
        if len(self.primary_key) > 1:
            lines.append(f"PRIMARY KEY ({', '.join(self.primary_key)})")
        lines += [
            f"FOREIGN KEY ({', '.join(f.columns)}) REFERENCES {f.ref_table}({', '.join(f.ref_columns)})"
            for f in self.foreign_keys
            if len(f.columns) > 1
        ]
        lines += [f"UNIQUE ({', '.join(u)})" for u in self.unique if len(u) > 1]
        lines += [f"CHECK ({c})" for c in self.checks]
        if self.referenced_by:
            lines.append(
                "REFERENCED BY " + ", ".join(f"{f.ref_table}({', '.join(f.columns)})" for f in self.referenced_by)
            )
        # A unique index that only backs the primary key or a UNIQUE constraint says nothing new.
        stated = [self.primary_key, *self.unique]
        for flag, word in ((False, "INDEX"), (True, "UNIQUE INDEX")):
            shown = [f"({', '.join(i.columns)})" for i in self.indexes if i.unique is flag and i.columns not in stated]
            if shown:
                lines.append(f"{word} {', '.join(shown)}")
        if self.sample is not None:
            lines.append(f"sample ({len(self.sample)} rows):")
            lines.append("\t".join(c.name for c in self.columns))
            lines += ["\t".join(cell(v) for v in row) for row in self.sample]
        return "\n".join(lines)


def cell(value: Any) -> str:
    """One value as a table cell: NULL spelled out, tabs and newlines flattened, long text cut."""
    if value is None:
        return "NULL"
    shown = value if type(value) is str else str(value)
    if "\t" in shown or "\n" in shown:  # a test, not two replace() copies: run_query renders 1,000 cells a page
        shown = shown.replace("\t", " ").replace("\n", " ")
    return shown if len(shown) <= CELL_CHARS else shown[:CELL_CHARS] + "…"


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


def columns_text(columns: list[Any]) -> str:
    return ", ".join(f"{c['name']} {c['type']}" for c in columns)
