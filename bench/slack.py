"""`uv run python bench/slack.py`: what the Slack server costs in context and in Slack API calls.

Against the fake Slack Web API of the server's tests (real slack-sdk, real HTTP on 127.0.0.1), measures:
- tools/list bytes with the defaults (reads only) and with writes enabled;
- Web API calls per history page of 100 messages from 30 distinct people, with a cold and a warm name cache,
  counted by the fake, by channel ID and by #name;
- over stdio, a server subprocess as a host runs it: spawn to initialize, and read_messages round trips.
Writes bench/results-slack.md and prints it. Call counts are exact; timings depend on the machine.
"""

from __future__ import annotations

import asyncio
import importlib.util
import platform
import statistics
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

from fastmcp import Client
from mcp_server_core.testing import StdioWire, python_module, tools_list_bytes
from mcp_server_slack.server import build_server
from mcp_server_slack.settings import SlackSettings

HERE = Path(__file__).parent
FAKE_PATH = HERE.parent / "packages" / "mcp-server-slack" / "tests" / "fake_slack.py"
ROUND_TRIPS = 50
SPAWNS = 3


def load_fake() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fake_slack", FAKE_PATH)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["fake_slack"] = module
    spec.loader.exec_module(module)
    return module


def settings(fake: Any, **extra: Any) -> SlackSettings:
    return SlackSettings(bot_token=fake_module.BOT_TOKEN, user_token=fake_module.USER_TOKEN, api_url=fake.url, **extra)


def by_method(fake: Any) -> Counter[str]:
    return Counter(r.method for r in fake.requests)


def describe(calls: Counter[str]) -> str:
    return f"{sum(calls.values())} ({', '.join(f'{m} {n}' for m, n in sorted(calls.items()))})"


async def history_calls(fake: Any, channel: str) -> tuple[Counter[str], Counter[str], int, int]:
    fake.reset_requests()
    async with Client(build_server(settings(fake))) as client:
        arguments = {"channel": channel, "limit": 100}
        cold_page = (await client.call_tool("read_messages", arguments)).structured_content or {}
        cold = by_method(fake)
        fake.reset_requests()
        await client.call_tool("read_messages", arguments)
        warm = by_method(fake)
    messages = cold_page["messages"]
    return cold, warm, len(messages), len({m["user"] for m in messages})


def stdio_timings(fake: Any, tmp: Path) -> tuple[float, float, float]:
    tokens = tmp / "tokens"
    tokens.write_text(f"{fake_module.BOT_TOKEN}\n")
    argv = python_module("mcp_server_slack", "--token-file", str(tokens), "--api-url", fake.url)
    spawns = []
    for _ in range(SPAWNS):
        started = time.perf_counter()
        with StdioWire(argv) as wire:
            wire.initialize()
            spawns.append(time.perf_counter() - started)
    with StdioWire(argv) as wire:
        wire.initialize()
        call = {"name": "read_messages", "arguments": {"channel": "C0GENERAL"}}
        wire.request("tools/call", call)  # warms the names
        trips = []
        for _ in range(ROUND_TRIPS):
            started = time.perf_counter()
            answer = wire.request("tools/call", call)
            trips.append(time.perf_counter() - started)
            assert not answer["result"].get("isError"), answer
    trips.sort()
    return statistics.median(spawns), statistics.median(trips), trips[int(len(trips) * 0.95) - 1]


async def measure(fake: Any) -> str:
    reads = await tools_list_bytes(build_server(settings(fake)))
    writes = await tools_list_bytes(build_server(settings(fake, allow_write=True, write_channels=["#random"])))
    by_id = await history_calls(fake, "C0BUSY000")
    by_name = await history_calls(fake, "#busy")
    with tempfile.TemporaryDirectory() as tmp:
        spawn, median, p95 = stdio_timings(fake, Path(tmp))
    when = datetime.now(tz=UTC).strftime("%Y-%m-%d")
    lines = [
        "# Benchmark: mcp-server-slack",
        "",
        f"`uv run python bench/slack.py` on {platform.machine()}, Python {platform.python_version()}, {when}, "
        "against the fake Slack Web API of the server's tests (real slack-sdk over HTTP on 127.0.0.1).",
        "",
        "## Context: tools/list bytes (compact JSON)",
        "",
        "| tools | bytes | budget |",
        "|---|---|---|",
        f"| defaults: 4 read tools | {reads:,} | 3,000 |",
        f"| with --allow-write: 7 tools | {writes:,} | |",
        "",
        "## Slack Web API calls per history page (read_messages, limit 100)",
        "",
        "| channel given as | messages shown | distinct authors | cold cache | warm cache |",
        "|---|---|---|---|---|",
    ]
    for label, (cold, warm, shown, authors) in (("ID C0BUSY000", by_id), ("name #busy", by_name)):
        lines.append(f"| {label} | {shown} | {authors} | {describe(cold)} | {describe(warm)} |")
    lines += [
        "",
        f"Cold: a new server. Names come from users.list pages (200 people each; the workspace has {len(fake.users)})",
        f"and the channel from conversations.info by ID, or conversations.list pages (200 channels each;"
        f" {len(fake.channels)} in all) by name.",
        "No call is made per message or per author.",
        "",
        "## Over stdio (server subprocess, fake Slack in this process)",
        "",
        "| measure | value |",
        "|---|---|",
        f"| spawn to initialize answer (median of {SPAWNS}) | {spawn * 1000:.0f} ms |",
        f"| read_messages #general round trip, warm (median of {ROUND_TRIPS}) | {median * 1000:.1f} ms |",
        f"| same, p95 | {p95 * 1000:.1f} ms |",
        "",
    ]
    return "\n".join(lines)


fake_module = load_fake()


def main() -> None:
    fake = fake_module.FakeSlack()
    with fake.serve():
        report = asyncio.run(measure(fake))
    (HERE / "results-slack.md").write_text(report)
    print(report)


if __name__ == "__main__":
    main()
