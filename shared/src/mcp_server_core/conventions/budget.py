"""One budget per answer: the text and the structured content of a tool's answer together, in bytes on the wire.

A tool declares a text budget (`tool(budget=...)`, 16,000 bytes unless it says otherwise); its whole answer, text
plus `structuredContent` as JSON, is at most twice that (`message_budget`). Every answer passes through
`fit_answer` (conventions.answer_of, on both tracks) and, for a tool built by hand, through the server's last
check (server.py), so no tool can send more, whatever its content holds:

- the text is cut at a clean boundary to its budget, keeping the notes it opens with and the tool's own closing
  note (how to continue: `note_at_end`), and saying how much was cut;
- the structure is trimmed to what is left: a list item by item from its end, a long string cut with a marker;
  small members (counts, cursors, flags) are always kept, so `next_cursor` survives any trim.

Sizes are those of the JSON the wire carries (escapes included: a control character costs six bytes there).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

__all__ = ["CUT_MARK", "cut_text", "fit_structure", "json_size"]

CUT_MARK = "…[cut]"
"""Ends a string value of structured content that was cut to fit the answer's budget."""

_SMALL = 256
"""A member of at most this many bytes is always kept whole: counts, flags, cursors, short names."""


def json_size(value: Any) -> int:
    """Bytes of `value` as compact JSON, as the wire carries it (UTF-8, non-ASCII unescaped)."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str).encode())


def cut_text(text: str, max_bytes: int, how_to_continue: str, *, opening: Sequence[str] = (), closing: str = "") -> str:
    """The text within `max_bytes` as JSON: its head cut at the last line break (or word) that fits, then a
    line saying so and how to read on, then `closing` (the tool's own continuation note). The `opening` notes,
    which the text already starts with, are never cut."""
    tail = f"\n{closing}" if closing else ""
    whole = text + tail
    if json_size(whole) <= max_bytes:
        return whole
    head_kept = "\n".join(opening)
    body = text[len(head_kept) + 1 :] if head_kept and text.startswith(head_kept + "\n") else text
    total = len(text.encode())
    # Room for the body: what is left after the notes, the cut line and the tail, in JSON bytes; the body's
    # JSON can be up to six times its characters (escaped controls), so cut by its encoded size.
    fixed = json_size(f"{head_kept}\n\n[cut at 0,000,000,000 of {total:,} bytes; {how_to_continue}]{tail}")
    room = max(max_bytes - fixed, 0)
    kept = _head_within(body, room)
    if len(kept) < len(body):
        boundary = kept.rfind("\n")
        if boundary < len(kept) // 2:  # one very long line: cut at a word instead of dropping half the room
            boundary = max(kept.rfind(" "), 0) or len(kept)
        kept = kept[:boundary].rstrip()
    prefix = f"{head_kept}\n" if head_kept else ""
    return f"{prefix}{kept}\n[cut at {len(kept.encode()):,} of {total:,} bytes; {how_to_continue}]{tail}"


def _head_within(text: str, max_json_bytes: int) -> str:
    """The longest head of `text` whose JSON is within `max_json_bytes` (binary search: linear overall)."""
    if json_size(text) <= max_json_bytes:
        return text
    low, high = 0, min(len(text), max_json_bytes)
    while low < high:
        middle = (low + high + 1) // 2
        if json_size(text[:middle]) <= max_json_bytes:
            low = middle
        else:
            high = middle - 1
    return text[:low]


def fit_structure(value: Any, max_bytes: int) -> Any:
    """`value` (JSON-shaped) trimmed to at most `max_bytes` of JSON: see the module's docstring."""
    if json_size(value) <= max_bytes:
        return value
    return _fit(value, max_bytes)


def _fit(value: Any, room: int) -> Any:
    if isinstance(value, str):
        kept = _head_within(value, max(room - len(CUT_MARK.encode()) - 2, 0))
        return kept + CUT_MARK
    if isinstance(value, list):
        kept_items: list[Any] = []
        used = 2
        for item in value:
            size = json_size(item) + (1 if kept_items else 0)
            if used + size > room:
                if not kept_items and room - used > _SMALL:  # one item larger than everything: keep its head
                    kept_items.append(_fit(item, room - used))
                break
            kept_items.append(item)
            used += size
        return kept_items
    if isinstance(value, dict):
        sizes = {key: json_size(member) for key, member in value.items()}
        overhead = 2 + sum(json_size(key) + 2 for key in value)
        small = {key for key, size in sizes.items() if size <= _SMALL}
        left = room - overhead - sum(sizes[key] for key in small)
        fitted: dict[str, Any] = {}
        for key, member in value.items():
            if key in small:
                fitted[key] = member
                continue
            fitted[key] = member if sizes[key] <= left else _fit(member, max(left, 2))
            left -= json_size(fitted[key])
        return fitted
    return value
