"""A .gitignore matcher written for the walker: patterns per directory, last match wins, deeper files override.

It follows gitignore(5): `#` comments, `!` negation, a trailing `/` matches directories only, a pattern with a
`/` before its end is anchored to the directory of its .gitignore, otherwise it matches a name at any depth;
`*`, `?`, `[...]` do not cross `/`, `**` does (`**/x`, `x/**`, `a/**/b`); `\\` escapes; trailing spaces are
dropped unless escaped. A directory that is ignored is not descended, so nothing below it can be re-included,
as in git.

A .gitignore comes with the tree, so whoever wrote the repository wrote its patterns, and a find_files glob
comes from the model: both are matched on RE2 (`compile_linear`), in time linear in the path whatever the
pattern (`*a*a*a*a*a*a*a*a*a*a*a*a*b` against a name of sixty `a`s took Python's `re` minutes, and the resource
listing ran it before `initialize` could be answered). A .gitignore's rules are matched as alternations of 32
first, so a path no rule matches, the common case, costs one match per 32 rules; at most `MAX_RULES` rules of at most
`MAX_RULE_CHARS` characters are read from one file, and a line RE2 cannot compile is skipped, as git skips a
pattern it cannot use.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from mcp_server_core import InvalidArgument
from mcp_server_core.conventions.patterns import LinearPattern, compile_linear

__all__ = ["MAX_RULES", "MAX_RULE_CHARS", "IgnoreRules", "Rule", "compile_glob", "parse_gitignore"]

MAX_RULES = 500
"""Rules read from one .gitignore (git's own repository has under 100); the rest are not applied."""
_RULES_PER_CHECK = 32
"""Rules matched together as one alternation. RE2's automaton for many more at once outgrows its cache and
falls back to a slower engine: 1,000 ordinary rules in one alternation cost about 1.3 ms a path, while 500
copies of the catastrophic glob in groups of 32 cost about 0.1 ms, and a common .gitignore microseconds."""
MAX_RULE_CHARS = 1_000
"""A longer line of a .gitignore is skipped: no path a rule could name is that long in practice."""

_GLOB_HINT = "Use * and ? within a name, ** across directories, [abc] for a set (e.g. *.py, src/**/test_*)."


def matchable(path: str) -> bytes:
    """A path as RE2 matches it: UTF-8, with each byte that is not UTF-8 (a surrogate escape) as U+FFFD, so
    `*` and `?` still match it."""
    if path.isascii():
        return path.encode()
    try:
        return path.encode()
    except UnicodeEncodeError:
        return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace").encode()


@dataclass
class Rule:
    source: str
    """The regex source (whole-path match), RE2 syntax."""
    negated: bool
    dir_only: bool
    _compiled: LinearPattern[bytes] | None = field(default=None, repr=False, compare=False)

    def matches(self, path: bytes) -> bool:
        if self._compiled is None:
            self._compiled = compile_linear(f"^(?:{self.source})$".encode(), dot_all=True, what=".gitignore pattern")
        return self._compiled.match(path) is not None


def _translate(pattern: str) -> str:
    """Regex source for one gitignore/glob pattern, matching a whole `/`-separated relative path."""
    out: list[str] = []
    i, n = 0, len(pattern)
    # A `[` with no `]` after it is a literal; known at once, so a line of unclosed `[` is not rescanned to its
    # end for each of them (quadratic: 256 such lines of 999 took 5 s, in every directory of every walk).
    last_close = pattern.rfind("]")
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
            if end > last_close:
                end = n  # no `]` from here on
            while end < n and pattern[end] != "]":
                end += 1
            if end >= n:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : end]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\").replace("[", "\\[") + "]")
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
    """The rules of one .gitignore: at most `MAX_RULES`, each a line of at most `MAX_RULE_CHARS` that RE2 compiles."""
    rules: list[Rule] = []
    for raw in text.splitlines():
        if len(rules) >= MAX_RULES:
            break
        if len(raw) > MAX_RULE_CHARS:
            continue
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
        rule = Rule(source, negated, dir_only)
        try:
            rule.matches(b"")  # compiled now: a line RE2 refuses is skipped, as git skips a pattern it cannot use
        except InvalidArgument:
            continue
        rules.append(rule)
    return rules


def compile_glob(pattern: str) -> LinearPattern[bytes]:
    """A name-search glob: with a `/` it matches the path relative to the search root, else a name at any depth.
    Match it against `matchable(path)`."""
    pattern = pattern.strip()
    if "/" in pattern.rstrip("/"):
        source = f"^{_translate(pattern.strip('/'))}$"
    else:
        source = f"^(?:.*/)?{_translate(pattern.rstrip('/'))}$"
    return compile_linear(source.encode(), dot_all=True, what="glob", hint=_GLOB_HINT)


def _any_of(rules: Sequence[Rule]) -> tuple[LinearPattern[bytes], ...] | None:
    """Patterns that together match where any of `rules` does: most paths are matched by none, at the cost of one
    match per `_RULES_PER_CHECK` rules (None: match each rule alone)."""
    checks = []
    for start in range(0, len(rules), _RULES_PER_CHECK):
        source = "|".join(f"(?:{rule.source})" for rule in rules[start : start + _RULES_PER_CHECK])
        try:
            checks.append(compile_linear(f"^(?:{source})$".encode(), dot_all=True, what=".gitignore"))
        except InvalidArgument:
            return None  # too big for RE2's memory bound together: each rule is still matched alone
    return tuple(checks)


@dataclass(frozen=True)
class _Layer:
    base: str
    rules: list[Rule]
    for_files: tuple[LinearPattern[bytes], ...] | None
    for_dirs: tuple[LinearPattern[bytes], ...] | None

    @classmethod
    def of(cls, base: str, rules: list[Rule]) -> _Layer:
        return cls(base, rules, _any_of([rule for rule in rules if not rule.dir_only]), _any_of(rules))


class IgnoreRules:
    """The .gitignore rules in force in one directory: its parents' files, then its own."""

    __slots__ = ("_layers",)

    def __init__(self, layers: Sequence[_Layer] = ()) -> None:
        # Each layer's base is the directory of its .gitignore relative to the walk's root ("" for the root).
        self._layers = tuple(layers)

    def with_file(self, base: str, text: str) -> IgnoreRules:
        rules = parse_gitignore(text)
        return IgnoreRules((*self._layers, _Layer.of(base, rules))) if rules else self

    def ignored(self, rel: str, is_dir: bool) -> bool:
        """Whether `rel` (relative to the walk's root, `/`-separated) is ignored."""
        verdict = False
        for layer in self._layers:
            if layer.base:
                if not rel.startswith(layer.base + "/"):
                    continue
                sub = rel[len(layer.base) + 1 :]
            else:
                sub = rel
            path = matchable(sub)
            checks = layer.for_dirs if is_dir else layer.for_files
            if checks is not None and all(check.match(path) is None for check in checks):
                continue
            # Some rule matches: the last one that does decides.
            for rule in reversed(layer.rules):
                if (is_dir or not rule.dir_only) and rule.matches(path):
                    verdict = not rule.negated
                    break
        return verdict

    def __bool__(self) -> bool:
        return bool(self._layers)
