"""A .gitignore matcher written for the walker: patterns per directory, last match wins, deeper files override.

It follows gitignore(5): `#` comments, `!` negation, a trailing `/` matches directories only, a pattern with a
`/` before its end is anchored to the directory of its .gitignore, otherwise it matches a name at any depth;
`*`, `?`, `[...]` do not cross `/`, `**` does (`**/x`, `x/**`, `a/**/b`); `\\` escapes; trailing spaces are
dropped unless escaped. A directory that is ignored is not descended, so nothing below it can be re-included,
as in git.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["IgnoreRules", "Rule", "compile_glob", "parse_gitignore"]


@dataclass(frozen=True)
class Rule:
    regex: re.Pattern[str]
    negated: bool
    dir_only: bool


def _translate(pattern: str) -> str:
    """Regex source for one gitignore/glob pattern, matching a whole `/`-separated relative path."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "*":
            if pattern.startswith("**", i):
                before_ok = i == 0 or pattern[i - 1] == "/"
                after = i + 2
                if before_ok and (after == n or pattern[after] == "/"):
                    if after == n:  # trailing "**": everything inside
                        out.append(".*")
                        i = after
                    else:  # "**/": zero or more directories
                        out.append("(?:.*/)?")
                        i = after + 1
                    continue
                out.append("[^/]*")
                i += 2
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = i + 1
            if end < n and pattern[end] in "!^":
                end += 1
            if end < n and pattern[end] == "]":
                end += 1
            while end < n and pattern[end] != "]":
                end += 1
            if end >= n:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : end]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def _strip_trailing_spaces(line: str) -> str:
    while line.endswith(" ") and not line.endswith("\\ "):
        line = line[:-1]
    return line.replace("\\ ", " ") if line.endswith("\\ ") else line


def parse_gitignore(text: str) -> list[Rule]:
    rules: list[Rule] = []
    for raw in text.splitlines():
        line = _strip_trailing_spaces(raw.rstrip("\r"))
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        if negated or line.startswith("\\!") or line.startswith("\\#"):
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        line = line.lstrip("/")
        source = _translate(line)
        if not anchored:
            source = "(?:.*/)?" + source
        rules.append(Rule(re.compile(f"^{source}$", re.DOTALL), negated, dir_only))
    return rules


def compile_glob(pattern: str) -> re.Pattern[str]:
    """A name-search glob: with a `/` it matches the path relative to the search root, else a name at any depth."""
    pattern = pattern.strip()
    if "/" in pattern.rstrip("/"):
        return re.compile(f"^{_translate(pattern.strip('/'))}$", re.DOTALL)
    return re.compile(f"^(?:.*/)?{_translate(pattern.rstrip('/'))}$", re.DOTALL)


class IgnoreRules:
    """The .gitignore rules in force in one directory: its parents' files, then its own."""

    __slots__ = ("_layers",)

    def __init__(self, layers: Sequence[tuple[str, list[Rule]]] = ()) -> None:
        # (base, rules): base is the directory of the .gitignore relative to the walk's root ("" for the root).
        self._layers = tuple(layers)

    def with_file(self, base: str, text: str) -> IgnoreRules:
        rules = parse_gitignore(text)
        return IgnoreRules((*self._layers, (base, rules))) if rules else self

    def ignored(self, rel: str, is_dir: bool) -> bool:
        """Whether `rel` (relative to the walk's root, `/`-separated) is ignored."""
        verdict = False
        for base, rules in self._layers:
            if base:
                if not rel.startswith(base + "/"):
                    continue
                sub = rel[len(base) + 1 :]
            else:
                sub = rel
            for rule in rules:
                if rule.dir_only and not is_dir:
                    continue
                if rule.regex.match(sub):
                    verdict = not rule.negated
        return verdict

    def __bool__(self) -> bool:
        return bool(self._layers)
