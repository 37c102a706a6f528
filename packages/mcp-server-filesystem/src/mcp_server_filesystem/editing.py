"""Edits by exact-match replacement, with a whitespace-tolerant fallback that says when it was used.

The file's encoding (BOM included) and line endings are kept: CRLF files are matched and written with CRLF
whatever line endings the edit texts use. A stale edit fails instead of clobbering: each edit states how
many occurrences it expects, and `expected_sha256` (a prefix of at least 8 hex digits) guards the whole file.
"""

from __future__ import annotations

import difflib
import hashlib
from dataclasses import dataclass

from mcp_server_core import Conflict, InvalidArgument
from pydantic import BaseModel, Field

from mcp_server_filesystem.reading import decode_text, encode_text, sniff_binary

__all__ = ["Edit", "EditOutcome", "apply_edits", "sha256_hex", "short_sha256"]

MAX_EDIT_BYTES = 32 * 1024 * 1024


class Edit(BaseModel):
    old_text: str
    new_text: str
    count: int = Field(1, description="expected matches")


@dataclass(frozen=True)
class EditOutcome:
    data: bytes
    diff: str
    notes: list[str]
    changed: bool


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


MIN_HASH_DIGITS = 8
"""How much of the SHA-256 a result shows and expected_sha256 needs: enough to tell one version of a file from
the next (a guard against a concurrent change, not against an attacker who could write the file anyway)."""


def short_sha256(data: bytes) -> str:
    return sha256_hex(data)[:MIN_HASH_DIGITS]


def check_hash(data: bytes, expected: str | None, shown: str) -> None:
    if expected is None:
        return
    wanted = expected.strip().lower()
    if len(wanted) < MIN_HASH_DIGITS or any(c not in "0123456789abcdef" for c in wanted):
        raise InvalidArgument(f"expected_sha256 must be at least {MIN_HASH_DIGITS} hex digits of the file's SHA-256.")
    if not sha256_hex(data).startswith(wanted):
        raise Conflict(
            f"{shown!r} changed since it was read: its sha256 is now {short_sha256(data)}, "
            f"not {wanted[:MIN_HASH_DIGITS]}.",
            hint="Read it again and redo the edit against what it holds now.",
        )


def _normalise(line: str) -> str:
    return " ".join(line.split())


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _fuzzy(text: str, edit: Edit, number: int) -> tuple[str, str] | None:
    """Replace line blocks equal to old_text once whitespace is normalised; (new text, note) or None."""
    lines = text.split("\n")
    old_lines = edit.old_text.strip("\n").split("\n")
    wanted = [_normalise(line) for line in old_lines]
    if not any(wanted):
        return None
    size = len(wanted)
    hits = [i for i in range(len(lines) - size + 1) if [_normalise(x) for x in lines[i : i + size]] == wanted]
    if not hits:
        return None
    if len(hits) != edit.count:
        where = ", ".join(str(h + 1) for h in hits[:10])
        raise Conflict(
            f"edit {number}: old_text matches {len(hits)} places ignoring whitespace (lines {where}); "
            f"expected {edit.count}.",
            hint="Add surrounding lines to make it unique, or set count to the number of places.",
        )
    new_lines = edit.new_text.strip("\n").split("\n") if edit.new_text.strip("\n") else []
    for hit in reversed(hits):
        # Each indentation the edit used maps to the one the file has on the matching line.
        mapping: dict[str, str] = {}
        for given, actual in zip(old_lines, lines[hit : hit + size], strict=True):
            if given.strip():
                mapping.setdefault(_indent(given), _indent(actual))
        adjusted = []
        for line in new_lines:
            indent = _indent(line)
            if line.strip() and indent in mapping:
                line = mapping[indent] + line[len(indent) :]
            adjusted.append(line)
        lines[hit : hit + size] = adjusted
    spans = ", ".join(f"{h + 1}-{h + size}" for h in hits)
    return "\n".join(lines), f"edit {number} matched ignoring whitespace (lines {spans}); indentation kept"


CLOSEST_CANDIDATES = 1_000
"""Distinct lines of at most `CLOSEST_LINE_CHARS` a failed edit's hint compares with what it asked for. difflib's
ratio is quadratic in a line's length and ran once per line: 20,000 lines that each shuffle the asked line took
12 s (a sync tool's thread runs on past any deadline). A hint, so the first ones do."""
CLOSEST_LINE_CHARS = 400


def _closest(text: str, old_text: str) -> str:
    first = next((line for line in old_text.split("\n") if line.strip()), old_text)
    lines = text.split("\n")
    candidates: dict[str, None] = {}
    for line in lines:
        stripped = line.strip()
        if stripped and len(stripped) <= CLOSEST_LINE_CHARS:
            candidates[stripped] = None
            if len(candidates) >= CLOSEST_CANDIDATES:
                break
    best = difflib.get_close_matches(first.strip()[:CLOSEST_LINE_CHARS], list(candidates), n=1, cutoff=0.5)
    if not best:
        return "Read the file again: its text differs from what the edit expects."
    number = next(i for i, line in enumerate(lines) if line.strip() == best[0]) + 1
    return f"Closest line is {number}: {lines[number - 1].strip()[:160]!r}."


def apply_edits(data: bytes, edits: list[Edit], shown: str) -> EditOutcome:
    if len(data) > MAX_EDIT_BYTES:
        raise InvalidArgument(f"{shown!r} is over {MAX_EDIT_BYTES:,} bytes; edit it with write_file instead.")
    if sniff_binary(data[:8192]):
        raise InvalidArgument(f"{shown!r} is a binary file; edit_file changes text only.")
    decoded = decode_text(data)
    original = decoded.text
    crlf = original.count("\r\n")
    crlf_file = crlf > 0 and crlf == original.count("\n")
    text = original.replace("\r\n", "\n") if crlf_file else original
    notes: list[str] = []
    for number, edit in enumerate(edits, start=1):
        if not edit.old_text or edit.count < 1:
            raise InvalidArgument(f"edit {number}: old_text must not be empty and count must be at least 1.")
        old = edit.old_text.replace("\r\n", "\n") if crlf_file else edit.old_text
        new = edit.new_text.replace("\r\n", "\n") if crlf_file else edit.new_text
        found = text.count(old)
        if found == edit.count:
            text = text.replace(old, new)
            continue
        if found:
            raise Conflict(
                f"edit {number}: old_text occurs {found} times; expected {edit.count}.",
                hint="Add surrounding lines to make it unique, or set count to the number of occurrences.",
            )
        fuzzy = _fuzzy(text, Edit(old_text=old, new_text=new, count=edit.count), number)
        if fuzzy is None:
            raise Conflict(f"edit {number}: old_text was not found in {shown!r}.", hint=_closest(text, old))
        text, note = fuzzy
        notes.append(note)
    before = original.replace("\r\n", "\n") if crlf_file else original
    # Hunks only, without context lines or the ---/+++ header: the result names the file once, and the model
    # wrote both sides of every change itself; the @@ line numbers say where each landed.
    hunks = difflib.unified_diff(before.splitlines(keepends=True), text.splitlines(keepends=True), n=0)
    diff = "".join(line if line.endswith("\n") else line + "\n" for line in list(hunks)[2:])
    final = text.replace("\n", "\r\n") if crlf_file else text
    try:
        encoded = encode_text(final, decoded.encoding)
    except UnicodeEncodeError:
        raise InvalidArgument(
            f"{shown!r} is {decoded.encoding}; the new text has characters that encoding cannot hold."
        ) from None
    return EditOutcome(encoded, diff, notes, final != original)
