"""The family's command line: settings from argv and the environment, host snippets, usage errors."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from mcp_server_core import ReferenceServer, ServerSettings, ServerSpec, run
from mcp_server_core.tracks.cli import host_config
from pydantic_settings import SettingsConfigDict

from .conftest import arithmetic, writing


class DemoSettings(ServerSettings):
    model_config = SettingsConfigDict(env_prefix="MCP_DEMO_", extra="ignore")
    target: str = "default-target"


def build(settings: DemoSettings) -> ReferenceServer:
    return ReferenceServer("demo", version="1", toolsets=[arithmetic(), writing()], enabled_toolsets=settings.toolsets)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", nargs="?")


SPEC = ServerSpec("mcp-server-demo", "A demo.", DemoSettings, build, add_arguments)


@pytest.mark.parametrize("host", ["claude", "cursor"])
def test_print_config_gives_an_mcp_servers_entry_with_the_given_arguments(
    host: str, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    run(SPEC, ["sqlite:///x.db", "--read-only", "--print-config", host])
    # A host starts servers from its own working directory: the relative file is pinned where it is now.
    assert json.loads(capsys.readouterr().out) == {
        "mcpServers": {
            "demo": {"command": "uvx", "args": ["mcp-server-demo", f"sqlite:///{tmp_path}/x.db", "--read-only"]}
        }
    }


def test_print_config_keeps_what_the_environment_set_and_makes_paths_absolute(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MCP_DEMO_READ_ONLY", "1")
    monkeypatch.setenv("MCP_DEMO_RESUMABLE", "true")
    run(SPEC, ["--auth-token-file", "tokens.txt", "--allowed-host", "a.test", "--print-config", "claude"])
    entry = json.loads(capsys.readouterr().out)["mcpServers"]["demo"]
    assert entry["args"] == [
        "mcp-server-demo",
        "--resumable",
        "--read-only",
        "--auth-token-file",
        str(tmp_path / "tokens.txt"),
        "--allowed-host",
        "a.test",
    ]
    assert "env" not in entry


def test_print_config_never_copies_a_password_or_a_token(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_DEMO_AUTH_TOKEN", "t0ken-from-this-shell-" + "x" * 20)
    run(SPEC, ["postgresql://ann:s3cret-pw@db.internal/app", "--print-config", "claude"])
    out = capsys.readouterr().out
    entry = json.loads(out)["mcpServers"]["demo"]
    assert "s3cret" not in out
    assert "t0ken" not in out
    assert entry["args"] == ["mcp-server-demo"]
    assert entry["env"] == {"MCP_DEMO_TARGET": "postgresql://ann:your-password@db.internal/app"}


def test_print_config_for_vscode_uses_its_servers_shape() -> None:
    assert host_config("vscode", "mcp-server-db", ["sqlite:///x.db"]) == {
        "servers": {"db": {"type": "stdio", "command": "uvx", "args": ["mcp-server-db", "sqlite:///x.db"]}}
    }


def test_print_config_names_the_environment_the_host_must_set_never_its_values(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DEMO_TOKEN", "s3cret-from-this-shell")
    spec = ServerSpec(
        "mcp-server-demo", "A demo.", DemoSettings, build, add_arguments, host_env=lambda _s: {"DEMO_TOKEN": "…"}
    )
    run(spec, ["--print-config", "cursor"])
    out = capsys.readouterr().out
    assert json.loads(out)["mcpServers"]["demo"]["env"] == {"DEMO_TOKEN": "…"}
    assert "s3cret" not in out


def test_the_command_line_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_DEMO_PORT", "9000")
    monkeypatch.setenv("MCP_DEMO_ALLOWED_ORIGINS", "https://a.example, https://b.example")
    settings = DemoSettings(port=9100)
    assert settings.port == 9100
    assert settings.allowed_origins == ["https://a.example", "https://b.example"]


def test_a_bad_setting_from_the_environment_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MCP_DEMO_PORT", "99999")
    with pytest.raises(SystemExit) as exited:
        run(SPEC, ["--print-config", "claude"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "port: Input should be less than or equal to 65535" in err


def test_an_unknown_toolset_is_refused_with_a_suggestion(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        run(SPEC, ["--toolsets", "writng"])
    assert exited.value.code == 2
    assert "Did you mean 'writing'" in capsys.readouterr().err


def test_help_lists_the_shared_options(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        run(SPEC, ["--help"])
    out = capsys.readouterr().out
    for option in ("--transport", "--host", "--port", "--read-only", "--toolsets", "--log-level", "--print-config"):
        assert option in out
    assert "MCP_DEMO_" in out


def test_bearer_tokens_come_from_the_environment_and_a_file(tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    from pathlib import Path

    token_file = Path(str(tmp_path)) / "tokens"
    one, two, env = ("file-token-1-" + "a" * 30), ("file-token-2-" + "b" * 30), ("env-token-" + "c" * 30)
    token_file.write_text(f"# tokens\n{one}\n\n   # an indented comment is a comment\n\t{two}  \n")
    monkeypatch.setenv("MCP_DEMO_AUTH_TOKEN", env)
    settings = DemoSettings(auth_token_file=token_file)
    assert settings.bearer_tokens() == [env, one, two]
    assert env not in repr(settings)


@pytest.mark.parametrize("short", ["x", "change-me", "a" * 31])
def test_a_token_too_short_to_be_secret_is_refused_at_start(
    short: str, tmp_path: object, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MCP_DEMO_AUTH_TOKEN", short)
    with pytest.raises(SystemExit) as exited:
        run(SPEC, ["--transport", "http", "--port", "1"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "too short to be a secret" in err
    assert "openssl rand -hex 32" in err
    assert f"a bearer token of {len(short)} characters" in err


def test_every_shared_setting_has_a_flag_of_its_own_name() -> None:
    """Docs name flags; a setting only the environment could set would make them lie (--resumable did)."""
    from mcp_server_core.tracks.cli import _parser

    dests = {action.dest for action in _parser(SPEC)._actions}
    secret_only = {"auth_token"}  # tokens never go on argv, where `ps` shows them
    missing = sorted(set(ServerSettings.model_fields) - dests - secret_only)
    assert not missing, f"settings without a flag: {missing}"


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("cursor", {"mcpServers": {"demo": {"url": "http://127.0.0.1:9123/mcp"}}}),
        ("vscode", {"servers": {"demo": {"type": "http", "url": "http://127.0.0.1:9123/mcp"}}}),
    ],
)
def test_print_config_with_http_points_the_host_at_the_url(
    host: str, expected: dict[str, object], capsys: pytest.CaptureFixture[str]
) -> None:
    # A stdio entry that starts an HTTP server would make the host wait on its stdout for ever.
    run(SPEC, ["--transport", "http", "--port", "9123", "--print-config", host])
    assert json.loads(capsys.readouterr().out) == expected


def test_print_config_with_http_and_a_token_asks_for_it_and_never_copies_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_DEMO_AUTH_TOKEN", "s3cret-token-value")
    run(SPEC, ["--transport", "http", "--print-config", "cursor"])
    out = capsys.readouterr().out
    assert "s3cret" not in out
    assert json.loads(out)["mcpServers"]["demo"]["headers"] == {"Authorization": "Bearer your-token"}


def test_print_config_with_http_for_claude_desktop_says_what_to_do_instead(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        run(SPEC, ["--transport", "http", "--print-config", "claude"])
    assert exited.value.code == 2
    assert "custom connector" in capsys.readouterr().err
