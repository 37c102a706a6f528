"""Compact shapes of GitHub objects, the parameter types every tool shares, and untrusted text made safe.

GitHub's JSON for one issue is about 5 kB; a model needs a tenth of it. Every shape here picks the fields worth
their context, and every piece of text a stranger could have written (titles, bodies, comments, commit messages,
file contents, logs) is cleaned for structured content and fenced, with its author and standing, for the text.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Self

from mcp_server_core import Rendered
from mcp_server_core.conventions.untrusted import Cleaned, clean, fence
from pydantic import AfterValidator, Field, PrivateAttr

_OWNER_SLASH_NAME = re.compile(r"[\w.-]+/[\w.-]+")


def _owner_slash_name(value: str) -> str:
    if not _OWNER_SLASH_NAME.fullmatch(value):
        raise ValueError("name the repository as owner/name, e.g. octocat/hello-world")
    return value


def _not_empty(value: str) -> str:
    if not value:
        raise ValueError("should not be empty")
    return value


def _positive(value: int) -> int:
    if value < 1:
        raise ValueError("should be 1 or more")
    return value


# Checked by a validator, not advertised as a pattern or a minimum: a model knows a repository as owner/name, a
# number or line as counting from 1 and a title, path or message as not empty, and the schema words would be read
# again on some 35 tools in every tools/list (issue 15). The check and its message reach the model all the same
# when it gets one wrong.
RepoName = Annotated[str, AfterValidator(_owner_slash_name), Field(description="owner/name")]
Number = Annotated[int, AfterValidator(_positive)]
NonEmpty = Annotated[str, AfterValidator(_not_empty)]
BODY_CHARS = 6_000
COMMENT_CHARS = 3_000
TITLE_CHARS = 300


def split_repo(repo: str) -> tuple[str, str]:
    owner, _, name = repo.partition("/")
    return owner, name


# --- results ---------------------------------------------------------------------------------------------


# Result classes carry no docstring: it would be sent in every outputSchema (tools/list budget).


class TextResult(Rendered):  # a result whose compact text is written by the tool that made it
    _text: str = PrivateAttr("")

    def with_text(self, text: str) -> Self:
        self._text = text
        return self


class Listing(TextResult):  # a page of compact items
    items: list[dict[str, Any]]
    next_cursor: str | None = None

    def render(self) -> str:
        return (self._text or "Nothing found.") + cursor_tail(self.next_cursor)


class Item(TextResult):  # one object and a page of its parts (comments, files), with a cursor for the rest
    item: dict[str, Any]
    parts: list[dict[str, Any]] | None = None
    next_cursor: str | None = None

    def render(self) -> str:
        return self._text + cursor_tail(self.next_cursor)


def cursor_tail(next_cursor: str | None) -> str:
    """The last line of a paged result's text, so a model that reads only the text can still page on."""
    return f"\nnext_cursor={next_cursor}" if next_cursor else ""


# --- untrusted text --------------------------------------------------------------------------------------


def role_of(thing: dict[str, Any]) -> str:
    """The author's standing towards the repository, as GitHub states it, in words."""
    user = thing.get("user") or thing.get("author") or {}
    if isinstance(user, dict) and user.get("type") == "Bot":
        return "bot"
    association = str(thing.get("author_association") or "NONE")
    if association == "NONE":
        return "no association with the repository"
    return association.lower().replace("_", " ")


def login_of(thing: dict[str, Any] | None, key: str = "user") -> str:
    user = (thing or {}).get(key) or {}
    return str(user.get("login") or "ghost") if isinstance(user, dict) else "ghost"


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}\n[cut at {limit:,} of {len(text):,} characters]"


def clean_text(text: str | None, limit: int = BODY_CHARS, *, markup: bool = True) -> str:
    return cut(clean(text, markup=markup).text, limit)


def one_line(text: str | None, limit: int = TITLE_CHARS) -> str:
    flat = " ".join(clean(text).text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def fenced(
    text: str | None,
    what: str,
    thing: dict[str, Any] | None = None,
    *,
    limit: int = BODY_CHARS,
    markup: bool = True,
    author: str | None = None,
) -> str:
    """`text` cleaned, cut and fenced as data written by `thing`'s author (or `author`)."""
    cleaned = clean(text, markup=markup)
    short = Cleaned(cut(cleaned.text, limit), cleaned.removed_invisible, cleaned.removed_hidden_html)
    if thing is not None:
        return fence(short, what=what, author=login_of(thing), role=role_of(thing))
    return fence(short, what=what, author=author)


def fenced_title_and_body(thing: dict[str, Any]) -> str:
    """An issue's or pull request's title and body, fenced together as written by its author (the line above
    the fence names the issue or pull request; its link, which a model can build, is in the structured content)."""
    return fenced(f"{thing.get('title') or ''}\n\n{thing.get('body') or ''}", "title and body", thing)


def fenced_lines(lines: list[str], what: str) -> str:
    """A listing whose lines carry text written by others (titles, messages), fenced once as a whole."""
    if not lines:
        return ""
    return fence(clean("\n".join(lines), markup=False), what=what)


def day(timestamp: str | None) -> str | None:
    return timestamp[:10] if timestamp else None


def said(value: Any, absent: str = "unknown") -> str:
    """A field for the text: GitHub's `null` (a draft's publication date, a run's pending conclusion) as a
    word; the text never shows Python's `None`."""
    return absent if value is None or value == "" else str(value)


def labels_of(thing: dict[str, Any]) -> list[str]:
    return [one_line(label.get("name"), 50) for label in thing.get("labels") or [] if isinstance(label, dict)]


def logins(users: list[dict[str, Any]] | None) -> list[str]:
    return [str(u.get("login")) for u in users or [] if isinstance(u, dict)]


def compact(fields: dict[str, Any]) -> dict[str, Any]:
    """Fields without empty values: absent costs nothing, `null` and `[]` cost bytes and say nothing."""
    return {k: v for k, v in fields.items() if v is not None and v != [] and v != ""}
