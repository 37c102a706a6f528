"""Fixtures: a fake Slack Web API per test (tests import it as `fake_slack`)."""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# Loaded by path under a unique name: the package's tests are not a Python package (several packages have a
# tests/ folder, and the root tests/ is imported as `tests`).
_spec = importlib.util.spec_from_file_location("fake_slack", Path(__file__).with_name("fake_slack.py"))
assert _spec is not None
assert _spec.loader is not None
fake_slack = importlib.util.module_from_spec(_spec)
sys.modules["fake_slack"] = fake_slack
_spec.loader.exec_module(fake_slack)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The shapes check runs last, so it sees the answers every other test of the run made the fake send."""
    last = [item for item in items if item.path.name == "test_shapes.py" and "mcp-server-slack" in str(item.path)]
    items[:] = [item for item in items if item not in last] + last


@pytest.fixture(autouse=True)
def _no_slack_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tokens or URLs in the developer's environment must not leak into a test's settings."""
    for name in list(os.environ):
        if name.startswith(("SLACK_", "MCP_SLACK_")):
            monkeypatch.delenv(name)


@pytest.fixture
def fake() -> Iterator[Any]:
    slack = fake_slack.FakeSlack()
    with slack.serve():
        yield slack
