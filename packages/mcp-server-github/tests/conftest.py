from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# The fake is a module of its own so the tests and bench/github.py share it; with --import-mode=importlib a
# tests/ folder is no package, so it is loaded here once under a fixed name.
_spec = importlib.util.spec_from_file_location("fake_github", Path(__file__).with_name("fake_github.py"))
assert _spec is not None
assert _spec.loader is not None
fake_github = importlib.util.module_from_spec(_spec)
sys.modules["fake_github"] = fake_github
_spec.loader.exec_module(fake_github)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # The check of the fake against GitHub's OpenAPI description reads every answer the other tests drew from it.
    items.sort(key=lambda item: item.path.name == "test_fake_github.py")


@pytest.fixture
def fake() -> Iterator[fake_github.FakeGitHub]:
    yield from fake_github.running()


@pytest.fixture(autouse=True)
def _no_ambient_token(monkeypatch: pytest.MonkeyPatch) -> None:
    # A developer's own GITHUB_TOKEN must neither reach the fake nor decide what a test sees.
    for name in ("GITHUB_TOKEN", "GITHUB_PERSONAL_ACCESS_TOKEN", "GITHUB_API_URL", "MCP_GITHUB_TOKEN"):
        monkeypatch.delenv(name, raising=False)
