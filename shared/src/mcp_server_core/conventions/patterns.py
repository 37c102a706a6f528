"""Patterns that someone else wrote, matched in time linear in the text: a model's regex, a glob, a .gitignore.

Python's `re` backtracks: `(\\w+\\s?)*zzz` over one 70-character line, or `*a*a*a*a*a*a*a*a*a*a*a*a*b` turned into a
regex over a 60-character name, runs for minutes in C while holding the GIL, so no deadline, `ping` or SIGTERM
can be served meanwhile. Every pattern that comes from outside the server is compiled here instead, on RE2
(`google-re2`): matching costs time linear in the text whatever the pattern, memory is bounded per pattern, and
the GIL is released while it runs. What RE2 cannot do in linear time (look-around, backreferences, atomic
groups, possessive quantifiers) is refused with a message that says so and what to write instead.

Patterns written by the server itself over hostile text (the helpers' own fixed regexes) stay on `re`: each is
checked to be free of nested quantifiers, so its cost is linear too.
"""

from __future__ import annotations

import re
from typing import Any, AnyStr, Generic

from mcp_server_core.conventions.errors import InvalidArgument

__all__ = ["MAX_PATTERN_CHARS", "LinearPattern", "compile_linear"]

MAX_PATTERN_CHARS = 4_000
"""A pattern longer than this is refused: no search needs one, and RE2's memory per pattern grows with it."""

_MAX_PROGRAM_BYTES = 32 * 1024 * 1024
"""RE2's memory for one compiled pattern; a pattern that needs more fails to compile (a clear error)."""

# What a backtracking engine offers and RE2 does not, each with the words to say so.
_BACKTRACKING_ONLY: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\(\?<?[=!]"), "look-around ((?=...), (?!...), (?<=...), (?<!...))"),
    (re.compile(r"\\[1-9]|\(\?P=\w+\)|\\k<\w+>|\\g<\w+>"), "a backreference (\\1, (?P=name))"),
    (re.compile(r"\(\?>"), "an atomic group ((?>...))"),
    (re.compile(r"[*+?}]\+"), "a possessive quantifier (*+, ++, ?+)"),
)


class LinearPattern(Generic[AnyStr]):
    """A compiled pattern with the part of `re.Pattern`'s interface the servers use, matched by RE2."""

    __slots__ = ("_compiled", "pattern")

    def __init__(self, compiled: Any, pattern: AnyStr) -> None:
        self._compiled = compiled
        self.pattern: AnyStr = pattern

    def search(self, text: AnyStr, pos: int = 0, endpos: int | None = None) -> Any:
        return self._compiled.search(text, pos, len(text) if endpos is None else endpos)

    def match(self, text: AnyStr, pos: int = 0, endpos: int | None = None) -> Any:
        return self._compiled.match(text, pos, len(text) if endpos is None else endpos)

    def fullmatch(self, text: AnyStr, pos: int = 0, endpos: int | None = None) -> Any:
        return self._compiled.fullmatch(text, pos, len(text) if endpos is None else endpos)

    def finditer(self, text: AnyStr, pos: int = 0, endpos: int | None = None) -> Any:
        return self._compiled.finditer(text, pos, len(text) if endpos is None else endpos)


def compile_linear(
    source: AnyStr,
    *,
    ignore_case: bool = False,
    multiline: bool = False,
    dot_all: bool = False,
    what: str = "regex",
    hint: str = "Rewrite it in RE2 syntax (Python's, without the backtracking-only features).",
) -> LinearPattern[AnyStr]:
    """`source` compiled for linear-time matching, or an `InvalidArgument` naming what is wrong with it.

    `what` names the pattern in the message ("regex", "glob", ".gitignore pattern"); the flags mean what
    `re.IGNORECASE`, `re.MULTILINE` and `re.DOTALL` mean.
    """
    import re2  # type: ignore[import-untyped]  # google-re2: imported when the first outside pattern is compiled, not at start-up

    text = source.decode("utf-8", "replace") if isinstance(source, bytes) else source
    if len(text) > MAX_PATTERN_CHARS:
        raise InvalidArgument(
            f"The {what} is {len(text):,} characters; at most {MAX_PATTERN_CHARS:,} are accepted.", hint=hint
        )
    flags = "".join(flag for flag, on in (("i", ignore_case), ("m", multiline), ("s", dot_all)) if on)
    prefix = f"(?{flags})" if flags else ""
    options = re2.Options()
    options.log_errors = False  # RE2 would print each rejected pattern to stderr
    options.max_mem = _MAX_PROGRAM_BYTES
    try:
        compiled = re2.compile((prefix.encode() if isinstance(source, bytes) else prefix) + source, options)
    except re2.error as exc:
        # Said in the words of what was written, where RE2 refused it for needing backtracking.
        for feature, words in _BACKTRACKING_ONLY:
            if feature.search(text):
                raise InvalidArgument(
                    f"The {what} {_shown(text)} uses {words}, which only a backtracking engine offers; this "
                    "server matches in time linear in the text (RE2) so that no pattern can stall it.",
                    hint=hint,
                ) from None
        reason = exc.args[0].decode(errors="replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise InvalidArgument(f"The {what} {_shown(text)} does not compile: {reason}.", hint=hint) from None
    return LinearPattern(compiled, source)


def _shown(text: str) -> str:
    return repr(text) if len(text) <= 120 else repr(text[:117] + "...")
