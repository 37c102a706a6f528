"""Slack messages as a model should read them: named, timed, and fenced as someone else's words.

A page of raw messages becomes records (the structured content) and a compact text in which every message's
text sits in a fence labelled with its channel and author, invisible characters removed and counted. All the
names a page needs are fetched in one batch before any message is converted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Self

from mcp_server_core import Rendered, Untrusted, one_line, take_within_budget
from mcp_server_core.conventions.budget import CUT_MARK, json_size
from mcp_server_core.conventions.untrusted import MAX_CLEAN_CHARS, Cleaned, clean, fence
from pydantic import PrivateAttr

from mcp_server_slack.blocks import blocks_to_mrkdwn, shows_blocks
from mcp_server_slack.directory import Channel, Directory, User
from mcp_server_slack.formatting import mentioned_ids, quoted, render_mrkdwn, ts_to_iso

__all__ = ["MessagePage", "fit", "fit_items", "page_text", "render_message", "to_records"]

TEXT_BUDGET = 20_000
"""Bytes of text one page of messages carries (a hundred short fenced messages fit); the rest is left to the
cursor, never silently dropped. Its structured content is held to as much again."""

MESSAGE_BYTES = 16_000
"""Bytes (as JSON) of one message's text a page shows: a longer one is cut, saying so in its text and its record,
so that even alone on a page its fenced text and its record fit the page's budget."""


def _raw_text(raw: dict[str, Any]) -> str:
    """What the message says as Slack's wire text, cut to what cleaning looks at (mrkdwn and cleaning then cost
    no more than that whatever a message holds)."""
    return _wire_text(raw)[:MAX_CLEAN_CHARS]


def _wire_text(raw: dict[str, Any]) -> str:
    text = str(raw.get("text") or "")
    if shows_blocks(raw):
        text = blocks_to_mrkdwn(raw["blocks"]) or text
    for attachment in raw.get("attachments") or []:
        extra = attachment.get("text") or attachment.get("fallback")
        if extra and extra not in text:
            text = f"{text}\n{extra}" if text else str(extra)
    return text


def _has_channel(raw: dict[str, Any]) -> bool:
    channel = raw.get("channel")
    return isinstance(channel, dict) and bool(channel.get("id"))


def to_records(
    raws: list[dict[str, Any]], directory: Directory, *, channel_label: str | None = None
) -> tuple[list[dict[str, Any]], str | None]:
    """Records for a page of raw messages, every name resolved in one batch (cache, then users.list pages); and
    why some authors or mentions show as user IDs, if the batch failed."""
    texts = [_raw_text(raw) for raw in raws]
    mentioned_users, mentioned_channels = mentioned_ids(texts)
    authors = {str(raw["user"]) for raw in raws if raw.get("user")}
    places = {id(raw): Channel.from_api(raw["channel"]) for raw in raws if _has_channel(raw)}
    peers = {place.peer for place in places.values() if place.peer}  # a DM hit is labelled by its person
    users = directory.users(authors | mentioned_users | peers)
    channels = directory.channels(mentioned_channels)

    def user_name(user_id: str) -> str | None:
        user = users.get(user_id)
        return str(user.handle) if user else None

    def channel_name(channel_id: str) -> str | None:
        channel = channels.get(channel_id)
        return str(channel.name) if channel else None

    records = []
    for raw, text in zip(raws, texts, strict=True):
        plain = render_mrkdwn(text, user_name=user_name, channel_name=channel_name)
        cleaned = clean(plain, markup=False)  # Slack renders no HTML: a literal "<div>" someone typed stays
        record: dict[str, Any] = {"ts": str(raw.get("ts") or ""), "time": ts_to_iso(raw.get("ts"))}
        record.update(_author(raw, users))
        record["text"] = cleaned.text
        whole = len(_wire_text(raw)) if len(text) == MAX_CLEAN_CHARS else len(cleaned.text)
        if whole > len(cleaned.text) or json_size(cleaned.text) > MESSAGE_BYTES:
            record["text"] = _head(cleaned.text, MESSAGE_BYTES - len(CUT_MARK.encode())) + CUT_MARK
            record["cut_from"] = whole
        if cleaned.removed_invisible:
            record["hidden_chars"] = cleaned.removed_invisible
        thread_ts = raw.get("thread_ts")
        if thread_ts:
            record["thread_ts"] = str(thread_ts)
        if raw.get("reply_count"):
            record["replies"] = int(raw["reply_count"])
        reactions = [
            f":{Untrusted(str(r.get('name')))}: {int(r.get('count', len(r.get('users') or [])))}"
            for r in raw.get("reactions") or []
            if isinstance(r, dict)
        ]
        if reactions:
            record["reactions"] = reactions
        files = [_file_label(f) for f in raw.get("files") or [] if isinstance(f, dict)]
        if files:
            record["files"] = files
        if raw.get("edited"):
            record["edited"] = True
        subtype = raw.get("subtype")
        if subtype and subtype not in ("bot_message", "thread_broadcast"):
            record["subtype"] = one_line(str(subtype))
        place = places.get(id(raw))
        if place is not None:  # labelled as read_messages and list_channels label it: "DM with @bob", "#general"
            record["channel"] = directory.label(place, users)
        elif channel_label:
            record["channel"] = channel_label
        if raw.get("permalink"):
            record["permalink"] = str(raw["permalink"])
        records.append(record)
    return records, users.unnamed_because


def _head(text: str, max_json_bytes: int) -> str:
    """The longest head of `text` whose JSON is within `max_json_bytes`."""
    head = text.encode()[:max_json_bytes].decode(errors="ignore")
    excess = json_size(head) - max_json_bytes
    # Each character dropped takes at least one byte off the JSON: one step is enough.
    return head[: len(head) - excess] if excess > 0 else head


def _file_label(file: dict[str, Any]) -> str:
    """A file's name in its one-line form, quoted where it holds more than a name does (it could otherwise pass for
    the mode the server adds to a withheld file)."""
    name = file.get("name") or file.get("title")
    if name:
        return quoted(Untrusted(str(name)))
    # A file Slack withholds (hidden_by_limit past a free plan's history, tombstone once deleted, file_access
    # in Slack Connect) comes as its ID and mode alone: the mode says why it has no name.
    mode = file.get("mode")
    return f"{Untrusted(str(file.get('id')))} ({Untrusted(str(mode))})" if mode else one_line(str(file.get("id")))


def _author(raw: dict[str, Any], users: dict[str, User]) -> dict[str, Any]:
    user_id = raw.get("user")
    user = users.get(str(user_id)) if user_id else None
    # The author is a record's field in its one-line form; the text quotes it where it holds more than a name.
    if user is not None:
        found: dict[str, Any] = {"user": user.id, "author": f"@{user.handle}"}
        if user.is_bot:
            found["bot"] = True
        return found
    bot_name = (raw.get("bot_profile") or {}).get("name") or raw.get("username")
    # A search hit of an integration's post carries only `username`: a message without a user ID is a bot's.
    if raw.get("bot_id") or raw.get("subtype") == "bot_message" or (bot_name and not user_id):
        return {
            "user": one_line(str(user_id or raw.get("bot_id") or "")),
            "author": one_line(str(bot_name or raw.get("bot_id"))),
            "bot": True,
        }
    return {"user": one_line(str(user_id or "")), "author": one_line(str(user_id or "unknown"))}


def render_message(record: dict[str, Any], *, page_channel: str | None = None) -> str:
    # Author and channel are named once, in the fence's label (the channel not even there when the page's header
    # names it): the head line stays short on a page of a hundred.
    head = [record.get("time") or "?", f"ts={record['ts']}"]
    thread_ts = record.get("thread_ts")
    if record.get("replies"):
        head.append(f"thread of {record['replies']} replies")
    elif thread_ts and thread_ts != record["ts"]:
        head.append(f"in thread {thread_ts}")
    if record.get("reactions"):
        head.append(" ".join(record["reactions"]))
    if record.get("files"):
        head.append("files: " + ", ".join(record["files"]))
    if record.get("cut_from"):
        head.append(f"cut to {len(record['text']):,} of {record['cut_from']:,} characters")
    for flag in ("edited", "subtype"):
        if record.get(flag):
            head.append("edited" if flag == "edited" else f"[{record[flag]}]")
    if record.get("permalink"):
        head.append(str(record["permalink"]))
    body = Cleaned(record["text"], int(record.get("hidden_chars", 0)), 0)
    channel = record.get("channel")
    where = f"message in {channel}" if channel and channel != page_channel else "message"
    author = str(record["author"])
    # "@" is the server's: the handle after it is quoted as a name is.
    shown = f"@{quoted(author[1:])}" if author.startswith("@") else quoted(author)
    fenced = fence(body, what=where, author=shown, role="bot" if record.get("bot") else None)
    return " · ".join(head) + "\n" + fenced


def fit(records: list[dict[str, Any]], budget: int = TEXT_BUDGET) -> int:
    """How many leading records fit in one page of messages, each measured with its channel named (the longer
    way): see `fit_items`."""
    return fit_items(records, render_message, budget)


def fit_items(items: list[dict[str, Any]], text_of: Callable[[dict[str, Any]], str], budget: int) -> int:
    """How many leading items fit in one page (at least one, so a page always makes progress): their text
    (`text_of` each) within `budget`, and their text and records together within twice that, so the page is
    never cut after it is made and its text and structure show the same items. Measured as JSON on the wire."""
    texts = [json_size(text_of(item)) + 1 for item in items]
    in_text = take_within_budget(texts, lambda size: size, budget)
    whole = [size + json_size(item) + 1 for size, item in zip(texts, items, strict=True)]
    return min(in_text, take_within_budget(whole, lambda size: size, 2 * budget))


def page_text(
    header: str,
    records: Iterable[dict[str, Any]],
    next_cursor: str | None,
    *,
    page_channel: str | None = None,
) -> str:
    lines = [header, *(render_message(r, page_channel=page_channel) for r in records)]
    if next_cursor:
        lines.append(f"next_cursor={next_cursor}")
    return "\n".join(lines)


class MessagePage(Rendered):
    source: str
    messages: list[dict[str, Any]]
    next_cursor: str | None = None
    # For the text only (the page's channel, named once in its header): kept out of the outputSchema, whose every
    # byte is paid in each conversation.
    _channel: str | None = PrivateAttr(None)

    def of_channel(self, label: str) -> Self:
        """A page of one channel, which `source` names: its messages' labels need not name it again."""
        self._channel = label
        return self

    def render(self) -> str:
        header = f"{self.source}: {len(self.messages)} message(s)" if self.messages else f"{self.source}: none."
        return page_text(header, self.messages, self.next_cursor, page_channel=self._channel)
