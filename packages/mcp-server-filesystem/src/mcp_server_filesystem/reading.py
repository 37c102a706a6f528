"""Reading files: text by line range with a byte budget and a clean cut, media as MCP content, binary refused.

A ranged read streams the file in 1 MiB chunks and keeps only the lines it returns, so memory stays flat
whatever the file's size; a tail read seeks back from the end.
"""

from __future__ import annotations

import base64
import codecs
import mimetypes
import os
from dataclasses import dataclass

from mcp_server_core import InvalidArgument

from mcp_server_filesystem.sandbox import Location, Sandbox

__all__ = [
    "MAX_MEDIA_BYTES",
    "Decoded",
    "TextSlice",
    "decode_text",
    "media_type",
    "read_media",
    "read_text",
    "sniff_binary",
]

CHUNK = 1 << 20
SNIFF_BYTES = 8192
MAX_MEDIA_BYTES = 10 * 1024 * 1024
MAX_WHOLE_DECODE = 64 * 1024 * 1024
"""UTF-16 text cannot be split on b'\\n'; it is decoded whole, up to this size."""

_BOMS = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)

_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"OggS", "audio/ogg"),
    (b"fLaC", "audio/flac"),
    (b"ID3", "audio/mpeg"),
)


def media_type(head: bytes, name: str) -> str | None:
    """image/* or audio/* when the bytes (or, failing that, the name) say so."""
    for magic, mime in _MAGIC:
        if head.startswith(magic):
            return mime
    if head[:4] == b"RIFF" and head[8:12] in (b"WEBP", b"WAVE"):
        return "image/webp" if head[8:12] == b"WEBP" else "audio/wav"
    if len(head) > 1 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0 and name.lower().endswith(".mp3"):
        return "audio/mpeg"
    guessed, _ = mimetypes.guess_type(name)
    if guessed and guessed.split("/")[0] in ("image", "audio") and guessed != "image/svg+xml":
        return guessed
    return None


def bom_encoding(head: bytes) -> str | None:
    for bom, encoding in _BOMS:
        if head.startswith(bom):
            return encoding
    return None


def sniff_binary(head: bytes) -> bool:
    """Binary the way git and ripgrep decide it: a NUL byte near the start (UTF-16 with a BOM is text)."""
    return bom_encoding(head) is None and b"\x00" in head[:SNIFF_BYTES]


@dataclass(frozen=True)
class Decoded:
    text: str
    encoding: str
    """A codec name that encodes `text` back to the same bytes ('utf-8-sig' keeps the BOM)."""


def decode_text(data: bytes) -> Decoded:
    """Text from bytes: BOM first, then UTF-8, else Latin-1 (which decodes anything and round-trips)."""
    encoding = bom_encoding(data)
    if encoding is not None:
        if encoding == "utf-8-sig":
            return Decoded(data.decode("utf-8-sig"), encoding)
        # utf-16-le/be with the BOM kept in the text would show a stray U+FEFF: keep it out, remember it.
        return Decoded(data[2:].decode(encoding), encoding + "+bom")
    try:
        return Decoded(data.decode("utf-8"), "utf-8")
    except UnicodeDecodeError:
        return Decoded(data.decode("latin-1"), "latin-1")


def encode_text(text: str, encoding: str) -> bytes:
    if encoding.endswith("+bom"):
        codec = encoding.removesuffix("+bom")
        bom = codecs.BOM_UTF16_LE if codec == "utf-16-le" else codecs.BOM_UTF16_BE
        return bom + text.encode(codec)
    return text.encode(encoding)


@dataclass(frozen=True)
class TextSlice:
    text: str
    first: int
    """1-based number of the first line returned (0 when nothing was)."""
    last: int
    total: int
    size: int
    cut: bool
    """True when the byte budget stopped the read before `limit` lines."""
    encoding: str


def _scan(fd: int, size: int, start: int) -> tuple[int, int]:
    """(total lines, byte offset where line `start` begins) in one pass of C-speed newline counting."""
    os.lseek(fd, 0, os.SEEK_SET)
    count = 0
    offset = 0 if start <= 1 else -1
    position = 0
    last = b""
    while chunk := os.read(fd, CHUNK):
        newlines = chunk.count(b"\n")
        if offset < 0 and count + newlines >= start - 1:
            cut = -1
            for _ in range(start - 1 - count):
                cut = chunk.index(b"\n", cut + 1)
            offset = position + cut + 1
        count += newlines
        position += len(chunk)
        last = chunk
    total = count + (1 if size and not last.endswith(b"\n") else 0)
    return total, max(offset, 0)


def _line_offset_from_end(fd: int, size: int, total: int, start: int) -> int:
    """The byte offset where line `start` begins, found by reading back from the end (tail reads)."""
    wanted = total - start + 1  # lines from `start` to the end
    position = size
    seen = 0
    ends_with_newline = size > 0 and os.pread(fd, 1, size - 1) == b"\n"
    if ends_with_newline:
        wanted += 1  # the final newline ends the last line; it does not begin one
    while position > 0:
        step = min(CHUNK, position)
        position -= step
        chunk = os.pread(fd, step, position)
        newlines = chunk.count(b"\n")
        if seen + newlines >= wanted:
            cut = len(chunk)
            for _ in range(wanted - seen):
                cut = chunk.rindex(b"\n", 0, cut)
            return position + cut + 1
        seen += newlines
    return 0


def _decode_slice(data: bytes, encoding_hint: str) -> tuple[str, str]:
    if encoding_hint == "utf-8-sig":
        data = data.removeprefix(codecs.BOM_UTF8)
    try:
        return data.decode("utf-8"), "utf-8" if encoding_hint != "utf-8-sig" else encoding_hint
    except UnicodeDecodeError:
        return data.decode("latin-1"), "latin-1"


def read_text(box: Sandbox, location: Location, *, offset: int, limit: int | None, max_bytes: int) -> TextSlice:
    """Lines `offset..` (1-based; negative counts from the end) up to `limit` lines and `max_bytes` bytes."""
    with box.open_file(location) as (fd, info):
        head = os.pread(fd, SNIFF_BYTES, 0)
        if sniff_binary(head):
            raise InvalidArgument(
                f"{location.shown!r} is a binary file ({info.st_size:,} bytes); it is not shown as text.",
                hint="read_file shows images and audio as media; list_directory on its folder gives its size.",
            )
        encoding = bom_encoding(head) or "utf-8"
        if encoding.startswith("utf-16"):
            return _read_decoded_whole(fd, info.st_size, location, offset, limit, max_bytes)
        if offset < 0:
            total, _ = _scan(fd, info.st_size, 1)
            start = max(total + offset + 1, 1)
            begin = _line_offset_from_end(fd, info.st_size, total, start)
        else:
            start = max(offset, 1)
            total, begin = _scan(fd, info.st_size, start)
        if total and start > total:
            raise InvalidArgument(f"offset={offset} is past the end: {location.shown!r} has {total:,} lines.")
        wanted = limit if limit is not None else total
        data, first, last, cut = _collect(fd, begin, start, wanted, max_bytes)
        text, used = _decode_slice(data, encoding)
        return TextSlice(text, first, last, total, info.st_size, cut, used)


def _collect(fd: int, begin: int, start: int, wanted: int, max_bytes: int) -> tuple[bytes, int, int, bool]:
    """Bytes of lines start..start+wanted-1 (line `start` begins at byte `begin`), whole lines within max_bytes."""
    os.lseek(fd, begin, os.SEEK_SET)
    kept: list[bytes] = []
    kept_bytes = 0
    lines_kept = 0
    pending = b""
    while lines_kept < wanted:
        chunk = os.read(fd, min(CHUNK, max_bytes + 1 - kept_bytes + 4096))
        if not chunk:
            if pending:  # a last line without a newline
                if kept_bytes + len(pending) > max_bytes:
                    return _finish(kept, pending, start, lines_kept, max_bytes - kept_bytes, True)
                kept.append(pending)
                lines_kept += 1
            break
        position = 0
        while lines_kept < wanted:
            end = chunk.find(b"\n", position)
            if end < 0:
                pending += chunk[position:]
                break
            piece = pending + chunk[position : end + 1]
            pending = b""
            position = end + 1
            if kept_bytes + len(piece) > max_bytes:
                return _finish(kept, piece, start, lines_kept, max_bytes - kept_bytes, True)
            kept.append(piece)
            kept_bytes += len(piece)
            lines_kept += 1
        if len(pending) > max_bytes:
            return _finish(kept, pending, start, lines_kept, max_bytes - kept_bytes, True)
    data = b"".join(kept)
    return data, (start if lines_kept else 0), start + lines_kept - 1, False


def _finish(
    kept: list[bytes], overflow: bytes, start: int, lines_kept: int, room: int, cut: bool
) -> tuple[bytes, int, int, bool]:
    if lines_kept == 0:
        # One line longer than the whole budget: show its head, cut on a character boundary.
        head = overflow[: max(room, 0)]
        head = head[: len(head.decode("utf-8", "ignore").encode())] if head else head
        return head, start, start, True
    return b"".join(kept), start, start + lines_kept - 1, cut


def _read_decoded_whole(
    fd: int, size: int, location: Location, offset: int, limit: int | None, max_bytes: int
) -> TextSlice:
    if size > MAX_WHOLE_DECODE:
        raise InvalidArgument(f"{location.shown!r} is UTF-16 and over {MAX_WHOLE_DECODE:,} bytes; it is not read.")
    data = os.pread(fd, size, 0)
    decoded = decode_text(data)
    lines = decoded.text.splitlines(keepends=True)
    total = len(lines)
    start = max(total + offset + 1, 1) if offset < 0 else max(offset, 1)
    if total and start > total:
        raise InvalidArgument(f"offset={offset} is past the end: {location.shown!r} has {total:,} lines.")
    wanted = lines[start - 1 : start - 1 + (limit if limit is not None else total)]
    kept: list[str] = []
    used = 0
    cut = False
    for piece in wanted:
        cost = len(piece.encode())
        if used + cost > max_bytes:
            cut = True
            if not kept:
                kept.append(piece.encode()[:max_bytes].decode("utf-8", "ignore"))
            break
        kept.append(piece)
        used += cost
    last = start + len(kept) - 1
    return TextSlice("".join(kept), start if kept else 0, last, total, size, cut, decoded.encoding)


def read_media(box: Sandbox, location: Location) -> tuple[str, str] | None:
    """(mime type, base64) for an image or audio file; None if the file is neither."""
    with box.open_file(location) as (fd, info):
        head = os.pread(fd, 64, 0)
        mime = media_type(head, location.name)
        if mime is None:
            return None
        if info.st_size > MAX_MEDIA_BYTES:
            raise InvalidArgument(
                f"{location.shown!r} is {mime} of {info.st_size:,} bytes; media over {MAX_MEDIA_BYTES:,} bytes "
                "is not sent."
            )
        data = os.pread(fd, info.st_size, 0)
        return mime, base64.b64encode(data).decode()
