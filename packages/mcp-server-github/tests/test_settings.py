"""Settings: where the token and the API URL come from, and that the token is a secret from the start."""

from __future__ import annotations

import pytest
from mcp_server_core import redact
from mcp_server_github.settings import GitHubSettings


@pytest.mark.parametrize("name", ["GITHUB_TOKEN", "GITHUB_PERSONAL_ACCESS_TOKEN", "MCP_GITHUB_TOKEN"])
def test_the_token_is_read_from_the_environment_and_redacted_at_once(
    monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    token = f"tok-{name.lower()}-0123456789"
    monkeypatch.setenv(name, token)
    settings = GitHubSettings()
    assert settings.token is not None
    assert settings.token.get_secret_value() == token
    assert token not in repr(settings)
    assert redact(f"failed with {token}") == "failed with ***"


def test_the_api_url_comes_from_github_api_url_for_enterprise(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_API_URL", "https://ghe.example.com/api/v3")
    assert GitHubSettings().api_url == "https://ghe.example.com/api/v3"
    assert GitHubSettings(api_url="http://127.0.0.1:1234").api_url == "http://127.0.0.1:1234"


def test_repos_is_a_comma_separated_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_GITHUB_REPOS", "acme/widgets, octocat/*")
    settings = GitHubSettings()
    assert settings.repos == ["acme/widgets", "octocat/*"]
    assert settings.allow_list.allows("octocat", "hello")


def test_no_token_is_allowed_for_public_data() -> None:
    assert GitHubSettings().token is None
