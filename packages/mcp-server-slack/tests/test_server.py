"""The Slack server passes the family's contract against the fake Slack, over both eras and stdio."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from fake_slack import BOT_TOKEN, USER_TOKEN, FakeSlack, make_server
from fastmcp import Client
from mcp_server_core import ReferenceServer
from mcp_server_core.testing import ContractSuite, StdioWire, python_module, tools_list_bytes

BUDGET = 3_000
READ_TOOLS = {"list_channels", "read_messages", "list_users", "search_messages"}
WRITE_TOOLS = {"post_message", "reply_to_thread", "add_reaction"}


def token_file(tmp_path: Path, *tokens: str) -> Path:
    path = tmp_path / "slack-tokens"
    path.write_text("\n".join(tokens) + "\n")
    path.chmod(0o600)
    return path


def stdio_argv(fake: FakeSlack, tmp_path: Path, *extra: str) -> list[str]:
    tokens = token_file(tmp_path, BOT_TOKEN, USER_TOKEN)
    return python_module("mcp_server_slack", "--token-file", str(tokens), "--api-url", fake.url, *extra)


def messages_state(fake: FakeSlack) -> str:
    return json.dumps([fake.messages, {f"{k[0]}/{k[1]}": v for k, v in fake.replies.items()}], sort_keys=True)


class TestContract(ContractSuite):
    budget = BUDGET
    secrets = (BOT_TOKEN, USER_TOKEN)

    @pytest.fixture(autouse=True)
    def _fake(self, fake: FakeSlack) -> None:
        self.fake = fake

    @pytest.fixture
    def server(self, fake: FakeSlack) -> ReferenceServer:
        return make_server(fake)

    def failing_calls(self) -> list[tuple[str, dict[str, Any]]]:
        return [
            ("read_messages", {"channel": "#no-such-channel"}),
            ("read_messages", {"channel": "C0OUTSIDE"}),
            ("read_messages", {"channel": "#general", "oldest": "the day before yesterday"}),
            ("read_messages", {"channel": "#general", "cursor": "not-a-cursor"}),
            ("read_messages", {"channel": "C0GENERAL", "thread_ts": "1712340000.000000"}),
            ("list_users", {"query": "nobody@example.com"}),
            ("list_users", {"channel": "#outside"}),
        ]

    def state(self, server: ReferenceServer) -> Any:
        return messages_state(self.fake)

    def sample_calls(self) -> list[tuple[str, dict[str, Any]]]:
        return [
            ("list_channels", {}),
            ("list_channels", {"query": "general"}),
            ("read_messages", {"channel": "#general", "permalinks": True}),
            ("read_messages", {"channel": "C0GENERAL", "thread_ts": "1712345778.000000"}),
            ("list_users", {"query": "alice"}),
            ("list_users", {"channel": "#random"}),
            ("search_messages", {"query": "release"}),
        ]

    def stdio_command(self, tmp_path: Path) -> list[str]:
        return stdio_argv(self.fake, tmp_path)


class TestContractWithWrites(TestContract):
    """The same contract with writes on: a refused write must reach Slack with nothing."""

    budget = 5_200  # measured 5,179 with the three write tools

    @pytest.fixture
    def server(self, fake: FakeSlack) -> ReferenceServer:
        return make_server(fake, allow_write=True, write_channels=["#random", "C0BUSY000"])

    def failing_calls(self) -> list[tuple[str, dict[str, Any]]]:
        return [
            *super().failing_calls(),
            ("post_message", {"channel": "#general", "text": "not an allowed channel"}),
            ("post_message", {"channel": "#random", "text": "<!channel> everyone look"}),
            ("reply_to_thread", {"channel": "#general", "thread_ts": "1712345778.000000", "text": "no"}),
            ("add_reaction", {"channel": "#random", "ts": "1712345683.000000", "emoji": "not_an_emoji"}),
            ("add_reaction", {"channel": "#general", "ts": "1712345688.000000", "emoji": "eyes"}),
        ]

    def stdio_command(self, tmp_path: Path) -> list[str]:
        return stdio_argv(self.fake, tmp_path, "--allow-write", "--write-channels", "#random")


async def test_defaults_list_only_reads_within_the_budget(fake: FakeSlack) -> None:
    server = make_server(fake)
    async with Client(server) as client:
        names = {t.name for t in await client.list_tools()}
    assert names == READ_TOOLS
    assert await tools_list_bytes(server) <= BUDGET


async def test_initialize_and_tools_list_make_no_slack_call(fake: FakeSlack) -> None:
    async with Client(make_server(fake)) as client:
        await client.list_tools()
        await client.list_resources()
    assert fake.calls() == 0, [r.method for r in fake.requests]


async def test_a_newly_seen_channel_announces_a_resource(fake: FakeSlack) -> None:
    server = make_server(fake)
    heard: list[str] = []

    async def on_message(message: Any) -> None:
        heard.append(getattr(getattr(message, "root", message), "method", type(message).__name__))

    # Each of the listing's two pages takes longer than the change hub's debounce window: still one notification.
    fake.latency_s["conversations.list"] = 0.2
    async with Client(server, mode="legacy", message_handler=on_message) as client:
        before = {str(r.uri) for r in await client.list_resources()}
        assert before == {"slack://channels", "slack://users"}
        await client.call_tool("list_channels", {})
        await asyncio.sleep(0.3)
        after = {str(r.uri) for r in await client.list_resources()}
        assert "slack://channel/C0GENERAL" in after
        assert heard.count("notifications/resources/list_changed") == 1, heard

        await client.call_tool("list_channels", {})  # nothing new: no notification
        await asyncio.sleep(0.3)
        assert heard.count("notifications/resources/list_changed") == 1, heard

        fake.add_channel("C0NEWONE0", "brand-new")
        await client.call_tool("read_messages", {"channel": "C0NEWONE0"})  # seen through conversations.info
        await asyncio.sleep(0.3)
        assert heard.count("notifications/resources/list_changed") == 2, heard
        text = (await client.read_resource("slack://channel/C0NEWONE0"))[0]
        directory = (await client.read_resource("slack://channels"))[0]
        users = (await client.read_resource("slack://users"))[0]
    assert "#brand-new" in getattr(text, "text", "")
    assert "C0GENERAL #general (public, member)" in getattr(directory, "text", "")
    users_text = getattr(users, "text", "")
    assert "U0ALICE00 @alice · Alice Archer" in users_text
    assert "@dave" not in users_text  # deactivated


def test_stdio_reads_history_and_announces_channels(fake: FakeSlack, tmp_path: Path) -> None:
    with StdioWire(stdio_argv(fake, tmp_path)) as wire:
        wire.initialize()
        assert fake.calls() == 0
        listed = wire.request("tools/list")["result"]["tools"]
        assert {t["name"] for t in listed} == READ_TOOLS
        result = wire.request("tools/call", {"name": "read_messages", "arguments": {"channel": "#general"}})["result"]
        assert not result.get("isError"), result
        text = result["content"][0]["text"]
        assert "[untrusted data: message by @carol" in text
        assert "Welcome @bobby! See #random." in text
        wire.wait_for_notification("notifications/resources/list_changed")
        assert wire.close() == 0
        assert BOT_TOKEN not in wire.stderr
        assert USER_TOKEN not in wire.stderr


def test_stdio_write_tools_appear_only_with_allow_write_and_channels(fake: FakeSlack, tmp_path: Path) -> None:
    with StdioWire(stdio_argv(fake, tmp_path, "--allow-write", "--write-channels", "#random,C0BUSY000")) as wire:
        wire.initialize()
        names = {t["name"] for t in wire.request("tools/list")["result"]["tools"]}
        assert names == READ_TOOLS | WRITE_TOOLS
        posted = wire.request(
            "tools/call", {"name": "post_message", "arguments": {"channel": "#random", "text": "hi https://x.example"}}
        )["result"]
        assert not posted.get("isError"), posted
        assert wire.close() == 0
    [post] = fake.requests_of("chat.postMessage")
    assert post.params["channel"] == "C0RANDOM0"
    assert post.params["unfurl_links"] is False
    assert post.params["unfurl_media"] is False


def test_allow_write_without_channels_refuses_to_start(fake: FakeSlack, tmp_path: Path) -> None:
    import subprocess

    done = subprocess.run(stdio_argv(fake, tmp_path, "--allow-write"), capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "--write-channels" in done.stderr


def test_no_token_refuses_to_start_and_print_config_needs_none(tmp_path: Path) -> None:
    import subprocess

    done = subprocess.run(python_module("mcp_server_slack"), capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "SLACK_BOT_TOKEN" in done.stderr
    config = subprocess.run(
        python_module("mcp_server_slack", "--print-config", "claude"), capture_output=True, text=True, timeout=60
    )
    assert config.returncode == 0
    assert json.loads(config.stdout)["mcpServers"]["slack"]["args"] == ["mcp-server-slack"]


def test_starts_and_lists_tools_with_a_dummy_token_and_no_slack(tmp_path: Path) -> None:
    tokens = token_file(tmp_path, "xoxb-0000-dummy-token")
    argv = python_module("mcp_server_slack", "--token-file", str(tokens), "--api-url", "http://127.0.0.1:9/api/")
    with StdioWire(argv) as wire:
        assert "result" in wire.initialize()
        assert {t["name"] for t in wire.request("tools/list")["result"]["tools"]} == READ_TOOLS
        failed = wire.request("tools/call", {"name": "list_channels", "arguments": {}}, timeout=60)["result"]
        assert failed["isError"] is True
        assert "unreachable" in failed["content"][0]["text"]
        assert wire.close() == 0


async def test_any_channel_reads_through_the_template(fake: FakeSlack) -> None:
    async with Client(make_server(fake)) as client:
        [content] = await client.read_resource("slack://channel/G0SECRET0")
        listed = {str(r.uri) for r in await client.list_resources()}
    assert getattr(content, "text", "").startswith("G0SECRET0 #secret-plans (private)\nmembers: 3")
    assert "slack://channel/G0SECRET0" in listed  # seen now, so listed on its own
    assert fake.calls() == 1


@pytest.mark.parametrize("with_file", [False, True])
def test_print_config_asks_the_host_for_a_token_unless_a_file_names_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], with_file: bool
) -> None:
    from mcp_server_core.tracks.cli import run
    from mcp_server_slack.server import SPEC

    monkeypatch.setenv("SLACK_BOT_TOKEN", BOT_TOKEN)  # the shell's own token must not reach the snippet
    extra = ["--token-file", str(token_file(tmp_path, BOT_TOKEN))] if with_file else []
    run(SPEC, [*extra, "--print-config", "claude"])
    out = capsys.readouterr().out
    entry = json.loads(out)["mcpServers"]["slack"]
    assert BOT_TOKEN not in out
    if with_file:
        assert "env" not in entry
        assert entry["args"] == ["mcp-server-slack", *extra]
    else:
        assert entry["env"] == {"SLACK_BOT_TOKEN": "xoxb-your-bot-token"}
