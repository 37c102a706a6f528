"""The gitignore matcher against the rules of gitignore(5), case by case."""

from __future__ import annotations

import pytest
from mcp_server_filesystem.gitignore import MAX_RULE_CHARS, MAX_RULES, IgnoreRules, compile_glob


def ignored(text: str, path: str, *, is_dir: bool = False, base: str = "") -> bool:
    return IgnoreRules().with_file(base, text).ignored(path, is_dir)


@pytest.mark.parametrize(
    ("rules", "path", "is_dir", "expected"),
    [
        ("*.log", "debug.log", False, True),
        ("*.log", "deep/er/debug.log", False, True),
        ("*.log", "debug.log.txt", False, False),
        ("build/", "build", True, True),
        ("build/", "build", False, False),  # a trailing slash matches directories only
        ("build/", "src/build", True, True),
        ("/top.txt", "top.txt", False, True),
        ("/top.txt", "src/top.txt", False, False),  # a leading slash anchors
        ("doc/*.md", "doc/a.md", False, True),
        ("doc/*.md", "x/doc/a.md", False, False),  # a middle slash anchors too
        ("doc/*.md", "doc/sub/a.md", False, False),  # * does not cross /
        ("**/cache", "a/b/cache", True, True),
        ("**/cache", "cache", True, True),
        ("logs/**", "logs/a/b.txt", False, True),
        ("a/**/b", "a/b", False, True),
        ("a/**/b", "a/x/y/b", False, True),
        ("a/**/b", "a/x/y/c", False, False),
        ("file?.txt", "file1.txt", False, True),
        ("file?.txt", "file10.txt", False, False),
        ("[abc].txt", "b.txt", False, True),
        ("[!abc].txt", "b.txt", False, False),
        ("[!abc].txt", "d.txt", False, True),
        ("*.log\n!keep.log", "keep.log", False, False),  # negation: last match wins
        ("!keep.log\n*.log", "keep.log", False, True),
        ("# comment\n\n*.tmp", "# comment", False, False),
        ("\\#hash", "#hash", False, True),
        ("\\!bang", "!bang", False, True),
        ("trailing   ", "trailing", False, True),
        ("space\\ ", "space ", False, True),
        ("*.py[cod]", "m.pyc", False, True),
        ("foo", "foo/bar", False, False),  # the directory foo is pruned by the walker, not matched here
    ],
)
def test_gitignore_rules(rules: str, path: str, is_dir: bool, expected: bool) -> None:
    assert ignored(rules, path, is_dir=is_dir) is expected


def test_nested_files_apply_below_their_directory_and_override_parents() -> None:
    rules = IgnoreRules().with_file("", "*.txt\n").with_file("src", "!keep.txt\n/local.md\n")
    assert rules.ignored("a.txt", False)
    assert rules.ignored("src/a.txt", False)
    assert not rules.ignored("src/keep.txt", False)
    assert rules.ignored("keep.txt", False)  # src's rules do not reach above src
    assert rules.ignored("src/local.md", False)
    assert not rules.ignored("src/sub/local.md", False)
    assert not rules.ignored("local.md", False)


@pytest.mark.parametrize(
    ("glob", "path", "expected"),
    [
        ("*.py", "a.py", True),
        ("*.py", "src/deep/a.py", True),
        ("src/*.py", "src/a.py", True),
        ("src/*.py", "src/deep/a.py", False),
        ("src/**/test_*", "src/x/y/test_a.py", True),
        ("**/*.md", "README.md", True),
        ("test_?.py", "lib/test_1.py", True),
    ],
)
def test_name_globs(glob: str, path: str, expected: bool) -> None:
    assert bool(compile_glob(glob).match(path)) is expected


def test_a_gitignore_is_read_up_to_its_bounds_and_lines_re2_refuses_are_skipped() -> None:
    many = "".join(f"*.ext{n}\n" for n in range(MAX_RULES)) + "late.txt\n"
    assert ignored(many, "a.ext0")
    assert not ignored(many, "late.txt")  # past the first MAX_RULES rules
    long_line = "x" * MAX_RULE_CHARS + "*\n"
    assert not ignored(long_line + "*.log\n", "x" * (MAX_RULE_CHARS + 5))
    assert ignored(long_line + "*.log\n", "a.log")
    assert ignored("[z-a].txt\n*.log\n", "a.log")  # a range RE2 refuses is skipped, the next rule still holds


def test_names_that_are_not_utf8_still_match_globs() -> None:
    name = "caf\udce9.log"  # byte 0xE9 as os.fsdecode gives it
    assert ignored("*.log", name)
    assert ignored("caf?.log", name)
