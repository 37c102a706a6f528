from __future__ import annotations

import errno
import logging

import pytest
from mcp_server_core import (
    NotFound,
    RateLimited,
    Refused,
    Unavailable,
    did_you_mean,
    os_failure,
    redact,
    register_secret,
)
from mcp_server_core.conventions.errors import RedactingFormatter


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("postgresql://admin:pa55word@db:5432/prod failed", "pa55word"),
        ("mysql+pymysql://root:r00t!x@127.0.0.1/test", "r00t!x"),
        ("Authorization: Bearer abc.def.ghi", "abc.def.ghi"),
        ("token ghp_" + "A" * 36 + " rejected", "ghp_" + "A" * 36),
        ("github_pat_" + "B" * 40, "github_pat_" + "B" * 40),
        ("xoxb-1234567890-abcdefghij", "xoxb-1234567890-abcdefghij"),
        ("password=opensesame&user=x", "opensesame"),
        ("api_key: sk-live-123456", "sk-live-123456"),
    ],
)
def test_secret_shapes_are_redacted(text: str, secret: str) -> None:
    cleaned = redact(text)
    assert secret not in cleaned
    assert "***" in cleaned
    assert redact(cleaned) == cleaned


def test_a_url_without_a_password_is_left_alone() -> None:
    assert redact("see https://example.org/a:b and postgresql://db/prod") == (
        "see https://example.org/a:b and postgresql://db/prod"
    )


def test_a_registered_secret_is_redacted_whatever_its_shape() -> None:
    register_secret("plain-looking-value-42")
    assert redact("it was plain-looking-value-42!") == "it was ***!"


def test_failures_redact_their_own_message() -> None:
    failure = NotFound("no table at postgresql://u:topsecret@h/db")
    assert "topsecret" not in str(failure)


def test_rate_limited_says_when_to_retry() -> None:
    assert str(RateLimited("GitHub said slow down.", retry_after=30)) == "GitHub said slow down. Retry after 30 s."


def test_did_you_mean_suggests_close_names_or_lists_the_choices() -> None:
    assert did_you_mean("ordrs", ["orders", "customers"], noun="table") == "Did you mean 'orders'?"
    assert did_you_mean("zzz", ["a", "b"], noun="table") == "Known tables: 'a', 'b'."
    assert "and 5 more" in did_you_mean("zzz", [f"t{i}" for i in range(15)])
    assert did_you_mean("x", [], noun="table") == "There is no table to choose from."


def test_log_lines_and_tracebacks_are_redacted() -> None:
    formatter = RedactingFormatter("%(message)s")
    try:
        raise ValueError("db at postgresql://a:leaked-pw@h/d down")
    except ValueError:
        record = logging.LogRecord("x", logging.ERROR, __file__, 1, "connect %s", ("Bearer tok123",), None)
        import sys

        record.exc_info = sys.exc_info()
    line = formatter.format(record)
    assert "leaked-pw" not in line
    assert "tok123" not in line
    assert "Traceback" in line


def test_os_failure_says_cause_errno_and_next_step_without_the_systems_path() -> None:
    full = os_failure(OSError(errno.ENOSPC, "No space left on device", "/srv/outside/secret"), "Writing 'a.txt'")
    assert isinstance(full, Unavailable)
    assert str(full) == (
        "Writing 'a.txt' failed: no space left on the device (ENOSPC). Free space on that device, or write elsewhere."
    )
    assert "/srv/outside" not in str(full)
    assert isinstance(os_failure(PermissionError(errno.EROFS, "x"), "Deleting 'd'"), Refused)
    assert "(EXDEV)" in str(os_failure(OSError(errno.EXDEV, "x"), "Moving 'a'"))
    unknown = os_failure(OSError(errno.ENOLINK, "Link has been severed"), "Reading 'r'")
    assert str(unknown).startswith("Reading 'r' failed: link has been severed (ENOLINK).")
