"""Slack's wire text made readable: mrkdwn and mentions to plain text, `ts` to ISO time and back.

Slack sends `<@U123>`, `<#C123|general>`, `<!here>`, `<https://x|label>` and `&lt;`-escaped text; a model reads
`@alice`, `#general`, `@here`, `label (https://x)` and `<` instead. Names come from the directory, so
rendering never calls Slack itself.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from datetime import UTC, date, datetime, timedelta

from mcp_server_core import InvalidArgument, Untrusted

__all__ = [
    "mentioned_ids",
    "parse_time",
    "quoted",
    "render_mrkdwn",
    "ts_to_iso",
]

_ANGLE = re.compile(r"<([^<>\n]+)>")
_USER_MENTION = re.compile(r"<@([UW][A-Z0-9]+)(?:\|[^>]*)?>")
_CHANNEL_MENTION = re.compile(r"<#([CGD][A-Z0-9]+)(?:\|[^>]*)?>")

_CODE = re.compile(r"(```.*?```|`[^`\n]+`)", re.DOTALL)
# Emphasis only where Slack itself would render it: a marker at a word edge, text hugging it on both sides.
_BOLD = re.compile(r"(?<![\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\w*])")
_ITALIC = re.compile(r"(?<![\w_])_(?=\S)([^_\n]+?)(?<=\S)_(?![\w_])")
_STRIKE = re.compile(r"(?<![\w~])~(?=\S)([^~\n]+?)(?<=\S)~(?![\w~])")

_RELATIVE = re.compile(r"^(\d+(?:\.\d+)?)\s*(m|min|h|d|w)$", re.IGNORECASE)
_TS = re.compile(r"^\d{9,11}(?:\.\d{1,6})?$")
_UNITS = {"m": 60, "min": 60, "h": 3600, "d": 86400, "w": 604800}

Resolve = Callable[[str], str | None]

_NAME_CHARS = frozenset(" .-_'")


def quoted(value: Untrusted | str) -> str:
    """A name as the server's text shows it: its one-line form, in double quotes (inner ones escaped) unless it
    holds only letters, digits, spaces and . - _ '. Standing is what the server says beside a name ("(bot)",
    "[admin]"): a display name "octocat (owner); verified by the server" shows as the name it is, quotes and all.
    A `str` is taken to be a one-line form already (a record's field)."""
    shown = str(value)
    if shown and all(char.isalnum() or char in _NAME_CHARS for char in shown):
        return shown
    return '"' + shown.replace('"', '\\"') + '"'


def ts_to_iso(ts: str | float | None) -> str | None:
    """Slack's `1712345678.000100` as `2024-04-05T19:34:38Z` (UTC, to the second)."""
    if ts is None or ts == "":
        return None
    try:
        moment = datetime.fromtimestamp(float(ts), tz=UTC)
    except (TypeError, ValueError, OverflowError, OSError):
        return None
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: str, *, now: datetime | None = None) -> str:
    """A Slack `ts` from what a model writes: a ts, `2h` / `7d` ago, an ISO date or date-time (UTC if naive)."""
    text = value.strip()
    if _TS.match(text):
        return text
    relative = _RELATIVE.match(text)
    moment: datetime
    if relative:
        seconds = float(relative.group(1)) * _UNITS[relative.group(2).lower()]
        moment = (now or datetime.now(tz=UTC)) - timedelta(seconds=seconds)
    else:
        try:
            if len(text) == 10:
                day = date.fromisoformat(text)
                moment = datetime(day.year, day.month, day.day, tzinfo=UTC)
            else:
                moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise InvalidArgument(
                f"{value!r} is not a time.",
                hint="Give a Slack ts (1712345678.000100), an ISO date or time (2024-04-05, 2024-04-05T12:00Z) "
                "or a span back from now (30m, 2h, 7d, 1w).",
            ) from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
    return f"{moment.timestamp():.6f}"


def mentioned_ids(texts: Iterable[str]) -> tuple[set[str], set[str]]:
    """(user IDs, channel IDs) mentioned in these texts, so their names can be fetched in one batch."""
    users: set[str] = set()
    channels: set[str] = set()
    for text in texts:
        users.update(_USER_MENTION.findall(text))
        channels.update(_CHANNEL_MENTION.findall(text))
    return users, channels


def _unescape(text: str) -> str:
    # Slack escapes exactly these three; &amp; last so "&amp;lt;" stays the literal "&lt;".
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _plain_emphasis(text: str) -> str:
    parts = _CODE.split(text)
    for index in range(0, len(parts), 2):  # the odd parts are code, left exactly as written
        part = _BOLD.sub(r"\1", parts[index])
        part = _ITALIC.sub(r"\1", part)
        parts[index] = _STRIKE.sub(r"\1", part)
    return "".join(parts)


def render_mrkdwn(text: str, *, user_name: Resolve, channel_name: Resolve) -> str:
    """Slack mrkdwn as plain text: mentions named, links shown with their target, escapes undone."""

    def special(match: re.Match[str]) -> str:
        inner = match.group(1)
        target, _, label = inner.partition("|")
        if target.startswith("@"):
            user_id = target[1:]
            name = user_name(user_id) or label.lstrip("@") or user_id
            return f"@{name}"
        if target.startswith("#"):
            channel_id = target[1:]
            name = label or channel_name(channel_id) or channel_id
            return f"#{name}"
        if target.startswith("!"):
            command = target[1:]
            if command in ("here", "channel", "everyone"):
                return f"@{command}"
            if command.startswith("subteam^"):
                return label if label.startswith("@") else f"@{label or command.split('^', 1)[1]}"
            if command.startswith("date^"):
                return label or command
            return label or f"@{command}"
        if target.startswith("mailto:"):
            return label or target.removeprefix("mailto:")
        if label and label != target:
            return f"{label} ({target})"
        return target

    rendered = _ANGLE.sub(special, text)
    return _unescape(_plain_emphasis(rendered))
