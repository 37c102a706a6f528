"""What a post sends: the model's text as Slack's formatting guide asks, mentions only where the user allowed them.

Slack reads `<...>` in a message as markup: `<@U123>` notifies a person, `<!subteam^S123>` a user group,
`<!here>`, `<!channel>`, `<!everyone>` (and the legacy `<!group>`) a whole channel, and `<url|label>` shows the
label in place of where the link leads. The model may have been handed its text by whoever wrote what it read,
so the text is escaped as the guide says (`&`, `<` and `>` as `&amp;`, `&lt;` and `&gt;`, and nothing else): any
markup in it shows as the characters it is. Two things survive, on conditions:

- a link to an `http(s):` or `mailto:` address, unless its label names another address (a label that reads
  `https://docs.acme.test/runbook` on a link to `https://evil.test/collect?d=...` is refused);
- mentions, only from the tool's `mention` argument, each one the user allowed at start-up (`--allow-mentions`
  for people and user groups, `--allow-broadcast` for here, channel and everyone).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import urlsplit

from mcp_server_core import InvalidArgument, Refused

__all__ = ["BROADCASTS", "MENTION_ENTRY", "MentionPolicy", "escape", "to_mrkdwn"]

BROADCASTS = ("here", "channel", "everyone")
MENTION_ENTRY = re.compile(r"^(?:users|[UW][A-Z0-9]{2,20}|S[A-Z0-9]{2,20})$")
"""What --allow-mentions takes: `users` (anyone in the workspace), a user ID, a user group ID."""

_LINK = re.compile(r"<((?:https?://|mailto:)[^\s<>|]+)(?:\|([^<>]*))?>", re.IGNORECASE)
_MARKUP = re.compile(r"<\s*[@!#]")
# A mention as a model may write it: U123, @U123, <@U123>, S123, <!subteam^S123|@sre>, here, @here, <!here>.
_MENTION = re.compile(r"^(?:<\s*)?[@!]?(?:subteam\^)?([A-Za-z0-9]{2,21})(?:\|[^<>]*)?(?:\s*>)?$")
# Words of a label that read as an address: a scheme, www., an e-mail address, or a dotted host name, in any
# script (a Cyrillic "о" in "dоcs.acme.test" reads the same) and with the dots that read as one.
_DOT = r"[.\u3002\uff0e\uff61]"
_HOST = rf"[\w-]+(?:{_DOT}[\w-]+)*{_DOT}[^\W\d_]{{2,}}"
_ADDRESS = re.compile(rf"(?i)^(?:[a-z][a-z0-9+.-]*:\S+|www{_DOT}\S+|[^\s@]+@{_HOST}|{_HOST}(?:[/:?#]\S*)?)$")


def escape(text: str) -> str:
    """Slack's three escapes, `&` first so an escape already there is shown as written."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _host(address: str) -> str:
    if address.lower().startswith("mailto:"):
        return address.split("@", 1)[-1].lower()
    parts = urlsplit(address if "://" in address else f"//{address}")
    return (parts.hostname or "").removeprefix("www.")


def _check_label(url: str, label: str) -> None:
    for word in label.split():
        stripped = word.strip(".,;:!?()[]{}'\"*_~`")
        if _ADDRESS.match(stripped) and _host(stripped) != _host(url):
            raise Refused(
                f"The link to {_host(url) or url} is labelled with another address ({stripped}): a reader would"
                " believe it leads there.",
                hint="Label the link with words, or with its own address, or post the address bare.",
            )


def to_mrkdwn(text: str) -> tuple[str, bool]:
    """The text as sent, and whether it held mention markup now shown as plain text."""
    out: list[str] = []
    last = 0
    for link in _LINK.finditer(text):
        url, label = link[1], link[2]
        if label:
            _check_label(url, label)
        out.append(escape(text[last : link.start()]))
        out.append(f"<{escape(url)}" + (f"|{escape(label)}" if label else "") + ">")
        last = link.end()
    out.append(escape(text[last:]))
    return "".join(out), bool(_MARKUP.search(text))


def _not_a_mention(given: str) -> InvalidArgument:
    return InvalidArgument(
        f"mention {given!r} is neither a user ID (U…), a user group ID (S…) nor here/channel/everyone.",
        hint="list_users shows each person's ID.",
    )


class MentionPolicy:
    """Who a post may notify: what `--allow-mentions` lists, and here/channel/everyone with `--allow-broadcast`."""

    def __init__(self, allowed: Iterable[str], *, allow_broadcast: bool) -> None:
        self.allowed = set(allowed)
        self.allow_broadcast = allow_broadcast

    def describe(self) -> str:
        names = sorted(self.allowed) + (list(BROADCASTS) if self.allow_broadcast else [])
        return ", ".join(names) if names else "no one"

    def markup(self, mentions: Iterable[str]) -> str:
        """The mentions as Slack's markup, each checked; a refusal names what the server allows."""
        out: list[str] = []
        for given in mentions:
            match = _MENTION.match(given.strip())
            if match is None:
                raise _not_a_mention(given)
            name = match[1]
            if name.lower() in BROADCASTS:
                allowed, tag = self.allow_broadcast, f"<!{name.lower()}>"
                why = "notifies everyone in the channel; the server allows it only with --allow-broadcast"
            elif re.fullmatch(r"[UW][A-Z0-9]+", name):
                allowed, tag = "users" in self.allowed or name in self.allowed, f"<@{name}>"
                why = "is not among the people this server may mention (--allow-mentions)"
            elif re.fullmatch(r"S[A-Z0-9]+", name):
                allowed, tag = name in self.allowed, f"<!subteam^{name}>"
                why = "is a user group this server may not mention (--allow-mentions)"
            else:
                raise _not_a_mention(given)
            if not allowed:
                raise Refused(f"Mentioning {name} {why}.", hint=f"It may mention: {self.describe()}.")
            out.append(tag)
        return " ".join(dict.fromkeys(out))
