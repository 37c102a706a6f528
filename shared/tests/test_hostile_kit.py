"""The hostile-content kit's checks fail on what they are meant to catch, and pass on the helpers' forms."""

from __future__ import annotations

import pytest
from mcp_server_core import Untrusted, fence
from mcp_server_core.testing.hostile import (
    FORGED,
    HOSTILE_BODIES,
    HOSTILE_NAMES,
    assert_fenced,
    assert_structure_one_line,
)


@pytest.mark.parametrize("name", sorted(HOSTILE_NAMES))
def test_a_name_printed_raw_is_caught_and_its_one_line_form_passes(name: str) -> None:
    value = HOSTILE_NAMES[name]
    if any(char in value for char in "\n\r\x1b\u202e\u200b\u2028"):
        with pytest.raises(AssertionError):
            assert_fenced(f"listing:\n{value}\t12 bytes", [value])
    assert_fenced(f"listing:\n{Untrusted(value)}\t12 bytes", [value])


@pytest.mark.parametrize("body", sorted(HOSTILE_BODIES))
def test_a_fenced_body_passes_and_an_unclosed_one_is_caught(body: str) -> None:
    value = HOSTILE_BODIES[body]
    assert_fenced(fence(value, what=f"file {Untrusted(HOSTILE_NAMES['fence'])}"), [value])
    with pytest.raises(AssertionError):
        assert_fenced(f"[untrusted data: x]\n```text\n{FORGED}")


@pytest.mark.parametrize("name", [name for name in HOSTILE_NAMES.values() if not name.isprintable()])
def test_a_raw_name_in_structured_content_is_caught_and_its_one_line_form_passes(name: str) -> None:
    with pytest.raises(AssertionError):
        assert_structure_one_line({"entries": [{"name": name}], "next_cursor": None})
    assert_structure_one_line({"entries": [{"name": f"{Untrusted(name)}", "size": 3}], "tab": "a\tb"})
