"""deploy/haproxy.cfg, run: two hosts with Redis beside them behind HAProxy, as docs/deploy.md's multi-host recipe
says, the file as shipped with only the hosts' addresses and the listening port replaced.

The hosts are tests/test_multi_host.py's (its `_cluster`, with this gateway instead of nginx). Checked through the
real protocol:
- `haproxy -c` accepts the shipped file as it is (only the compose host names do not resolve here);
- handshake-era sessions opened through the gateway land on both hosts (round robin at initialize), and every
  later request of each reaches the host that opened it (the stick table learned its Mcp-Session-Id): each call
  is answered, and counted on that host's /metrics;
- 2026-07-28 requests (no session) spread over both hosts;
- a client whose host is killed mid-stream resumes with Last-Event-ID through the gateway on the other host and
  misses no event (the same check as behind nginx).

Skipped when haproxy or redis-server is missing (.ci/run installs both).
"""

from __future__ import annotations

import contextlib
import re
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from mcp_server_core.testing import HAPROXY, REDIS_SERVER, free_port, haproxy

from tests.test_multi_host import (
    HANDSHAKE,
    MODERN,
    TOKENS,
    Cluster,
    _cluster,
    _holder,
    _initialize,
    _simple_call,
    _wait_for,
    resume_after_its_host_dies,
)

pytestmark = [
    pytest.mark.skipif(HAPROXY is None, reason="haproxy is not installed (apt-get install haproxy)"),
    pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed (apt-get install redis-server)"),
]

SHIPPED = Path(__file__).resolve().parents[1] / "deploy" / "haproxy.cfg"


def render(text: str, port: int, first: int, second: int) -> str:
    """The shipped file with compose's addresses replaced: the listener on 127.0.0.1:`port`, host-a and host-b on
    this machine's `first` and `second` ports. Each is replaced where the file has it, and only there."""
    replacements = {
        "bind :8080\n": (1, f"bind 127.0.0.1:{port}\n"),
        " host-a:8000": (2, f" 127.0.0.1:{first}"),
        " host-b:8000": (2, f" 127.0.0.1:{second}"),
    }
    for old, (count, new) in replacements.items():
        assert text.count(old) == count, f"deploy/haproxy.cfg no longer has {old!r} {count} times"
        text = text.replace(old, new)
    return text


@contextlib.contextmanager
def haproxy_gateway(folder: Path, first: int, second: int) -> Iterator[str]:
    """deploy/haproxy.cfg in front of the hosts on ports `first` and `second`: its /mcp URL, once both hosts pass
    its health checks."""
    folder.mkdir(exist_ok=True)
    port = free_port()
    config = folder / "haproxy.cfg"
    config.write_text(render(SHIPPED.read_text(), port, first, second))
    with tempfile.TemporaryFile() as log, haproxy(config, port, log=log):
        url = f"http://127.0.0.1:{port}"

        def ready() -> bool:
            with contextlib.suppress(httpx2.HTTPError):
                return httpx2.get(f"{url}/readyz", timeout=5).status_code == 200
            return False

        _wait_for(ready, "HAProxy's /readyz never answered 200")
        try:
            yield f"{url}/mcp"
        except BaseException:
            log.seek(0)
            print(log.read().decode(errors="replace")[-5000:])  # HAProxy's own account, beside the failure
            raise


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    """Hosts of one test's own, which it may kill."""
    with _cluster(tmp_path, haproxy_gateway) as started:
        yield started


@pytest.fixture(scope="module")
def steady_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """Hosts the tests that harm none of them share (each counts only what it adds)."""
    with _cluster(tmp_path_factory.mktemp("haproxy"), haproxy_gateway) as started:
        yield started


def test_the_shipped_file_is_valid_haproxy_configuration() -> None:
    assert HAPROXY is not None
    checked = subprocess.run([HAPROXY, "-c", "-f", str(SHIPPED)], capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stderr
    assert "Configuration file is valid" in checked.stdout, checked.stdout
    # The only warnings: compose's host names, which only Docker's DNS knows (init-addr none starts without them).
    warnings = [line for line in checked.stderr.splitlines() if "[WARNING]" in line]
    assert all("could not resolve address 'host-" in line for line in warnings), checked.stderr


def _calls_counted(cluster: Cluster, host: int) -> float:
    """tools/call of test_simple_text this host answered, by its /metrics."""
    metrics = httpx2.get(
        cluster.hosts[host].replace("/mcp", "/metrics"), headers={"Authorization": f"Bearer {TOKENS[0]}"}
    ).text
    pattern = r'^mcp_requests_total\{(?=[^}]*method="tools/call")(?=[^}]*name="test_simple_text")[^}]*\} (\S+)$'
    return sum(float(value) for value in re.findall(pattern, metrics, re.MULTILINE))


def test_each_handshake_era_session_stays_on_the_host_that_opened_it(steady_cluster: Cluster) -> None:
    cluster = steady_cluster
    before = [_calls_counted(cluster, host) for host in range(2)]
    calls = 4
    with contextlib.ExitStack() as stack:
        sessions = []
        for token in TOKENS:  # one each: the hosts allow a credential 2 sessions, and the other tests use them too
            client = stack.enter_context(httpx2.Client(timeout=30, headers={"Authorization": f"Bearer {token}"}))
            sessions.append((client, token, _initialize(client, cluster.gateway, token, {})))
        holders = [_holder(cluster, session, token) for _, token, session in sessions]
        # Round robin at initialize: one session on each host, both from this one client address (which nginx's
        # ip_hash would have sent to one host).
        assert sorted(holders) == [0, 1], holders
        for client, _, session in sessions:
            for number in range(calls):  # a request reaching the other host would get 404 for the session
                answer = client.post(
                    cluster.gateway,
                    headers={"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
                    | session,
                    json={
                        "jsonrpc": "2.0",
                        "id": 10 + number,
                        "method": "tools/call",
                        "params": {"name": "test_simple_text", "arguments": {}},
                    },
                )
                assert answer.status_code == 200, answer.text
                assert '"isError":false' in answer.text.replace(" ", ""), answer.text
            assert session["MCP-Protocol-Version"] == HANDSHAKE
    after = [_calls_counted(cluster, host) for host in range(2)]
    assert [a - b for a, b in zip(after, before, strict=True)] == [calls, calls], (before, after)


def test_2026_07_28_requests_spread_over_both_hosts(steady_cluster: Cluster) -> None:
    cluster = steady_cluster
    before = [_calls_counted(cluster, host) for host in range(2)]
    calls = 6
    for _ in range(calls):
        assert _simple_call(cluster.gateway, TOKENS[0])["isError"] is False
    added = [a - b for a, b in zip((_calls_counted(cluster, host) for host in range(2)), before, strict=True)]
    assert sum(added) == calls, added
    assert all(count > 0 for count in added), f"one host answered every {MODERN} request: {added}"


def test_a_stream_resumes_on_the_other_host_when_its_host_dies(cluster: Cluster) -> None:
    resume_after_its_host_dies(cluster)
