"""Block Kit as Slack's wire text, so a message whose content is only in `blocks` reads like any other.

Block Kit apps and Workflow Builder often send an empty `text`, and what Slack shows comes from the blocks. The
blocks are turned into the mrkdwn Slack would send (`<@U…>`, `<#C…>`, `<url|label>`, `<!here>`, escaped `&`,
`<`, `>`), so the one rendering path names the mentions in the page's batch, fences the result as someone
else's words and strips invisible characters, exactly as for `text`. Only text is kept: buttons, images and
inputs are what a reader clicks or sees, not what the message says.
"""

from __future__ import annotations

from typing import Any

from mcp_server_slack.formatting import ts_to_iso

__all__ = ["blocks_to_mrkdwn", "shows_blocks"]

_RICH_TEXT_ONLY = frozenset({"rich_text"})
_MOST_INDENT = 8  # Slack's own bound for a list's indent (@slack/types' RichTextList: 0 to 8)
_MOST_OFFSET = 1_000_000  # Slack names none; a list numbered past this is no list a person wrote


def _items(value: Any) -> list[Any]:
    """A field that should hold a list, as one: the blocks are the sender's JSON, any shape may come."""
    return value if isinstance(value, list) else []


def _bounded(value: Any, most: int) -> int:
    """A field that should hold a small count, as one between 0 and `most` (else 0): "indent": 1e9 would have
    made a gigabyte of spaces, "offset": "x" failed the whole read."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:  # NaN
        return 0
    return int(min(max(value, 0), most))


def _escape(text: str) -> str:
    # plain_text and rich_text carry text as typed; Slack's wire text escapes exactly these three.
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _text_object(obj: Any) -> str:
    """A composition text object: mrkdwn is already wire text, plain_text is not."""
    if not isinstance(obj, dict):
        return ""
    text = str(obj.get("text") or "")
    return text if obj.get("type") == "mrkdwn" else _escape(text)


def _inline(element: dict[str, Any]) -> str:
    kind = element.get("type")
    if kind == "text":
        text = _escape(str(element.get("text") or ""))
        return f"`{text}`" if (element.get("style") or {}).get("code") and text.strip() else text
    if kind == "link":
        url = str(element.get("url") or "")
        label = _escape(str(element.get("text") or ""))
        return f"<{url}|{label}>" if label else f"<{url}>"
    if kind == "user":
        return f"<@{element.get('user_id')}>"
    if kind == "channel":
        return f"<#{element.get('channel_id')}>"
    if kind == "usergroup":
        return f"<!subteam^{element.get('usergroup_id')}>"
    if kind == "broadcast":
        return f"<!{element.get('range')}>"
    if kind == "emoji":
        return f":{element.get('name')}:"
    if kind == "date":
        return _escape(str(element.get("fallback") or ts_to_iso(element.get("timestamp")) or ""))
    if kind == "color":
        return _escape(str(element.get("value") or ""))
    return ""


def _inlines(elements: Any) -> str:
    return "".join(_inline(e) for e in _items(elements) if isinstance(e, dict))


def _rich_text(block: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    for part in _items(block.get("elements")):
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "rich_text_section":  # a section's closing newline is the paragraph break the join makes
            lines.append(_inlines(part.get("elements")).rstrip("\n"))
        elif kind == "rich_text_list":
            indent = "  " * _bounded(part.get("indent"), _MOST_INDENT)
            number = _bounded(part.get("offset"), _MOST_OFFSET)
            for item in _items(part.get("elements")):
                number += 1
                marker = f"{number}." if part.get("style") == "ordered" else "-"
                inner = item.get("elements") if isinstance(item, dict) else None
                lines.append(f"{indent}{marker} {_inlines(inner)}")
        elif kind == "rich_text_quote":
            quoted = _inlines(part.get("elements"))
            lines += ["&gt; " + line for line in quoted.split("\n")]
        elif kind == "rich_text_preformatted":
            lines.append("```\n" + _inlines(part.get("elements")).strip("\n") + "\n```")
    return lines


def blocks_to_mrkdwn(blocks: Any) -> str:
    """The text of section (text and fields), header, context and rich_text blocks, one block after another."""
    lines: list[str] = []
    for block in _items(blocks):
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind in ("section", "header"):
            if block.get("text"):
                lines.append(_text_object(block["text"]))
            fields = [_text_object(f) for f in _items(block.get("fields"))]
            lines += [f for f in fields if f]
        elif kind == "context":
            parts = [
                _text_object(e)
                for e in _items(block.get("elements"))
                if isinstance(e, dict) and e.get("type") != "image"
            ]
            if any(parts):
                lines.append(" · ".join(p for p in parts if p))
        elif kind == "rich_text":
            lines += _rich_text(block)
    return "\n".join(line for line in lines if line.strip()).strip()


def shows_blocks(raw: dict[str, Any]) -> bool:
    """Whether Slack shows this message from its blocks rather than its `text`.

    A person's message carries rich_text blocks that say what `text` says, and `text` is kept as Slack wrote it.
    An app's section, header or context blocks are what Slack shows, its `text` only the notification's
    fallback; and an empty `text` leaves nothing else to show.
    """
    blocks = [b for b in _items(raw.get("blocks")) if isinstance(b, dict)]
    if not blocks:
        return False
    if not str(raw.get("text") or "").strip():
        return True
    return any(b.get("type") not in _RICH_TEXT_ONLY for b in blocks)
