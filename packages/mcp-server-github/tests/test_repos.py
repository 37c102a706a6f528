"""Repositories against the fake: files by line range, trees, history, and the writes in one commit."""

from __future__ import annotations

import base64

from fake_github import FakeGitHub, blob_sha, server_for, text_of
from fastmcp import Client

REPO = "acme/widgets"


async def test_a_file_is_decoded_from_base64_and_read_by_line_range(fake: FakeGitHub) -> None:
    async with Client(server_for(fake)) as client:
        fake.reset_requests()
        result = await client.call_tool(
            "get_file_contents", {"repo": REPO, "path": "src/app.py", "start_line": 10, "end_line": 12}
        )
    assert fake.count() == 1
    assert fake.requests[0].path == f"/repos/{REPO}/contents/src/app.py"
    content = result.structured_content
    assert content["content"] == "line 10\nline 11\nline 12\n"
    assert (content["start_line"], content["end_line"], content["total_lines"]) == (10, 12, 2000)
    assert "next_start_line" not in content
    assert "[untrusted data: file acme/widgets:src/app.py by its committers" in text_of(result)


async def test_a_long_file_is_read_in_pieces_that_say_where_to_go_on(fake: FakeGitHub) -> None:
    async with Client(server_for(fake)) as client:
        first = (await client.call_tool("get_file_contents", {"repo": REPO, "path": "src/app.py"})).structured_content
        rest = (
            await client.call_tool(
                "get_file_contents", {"repo": REPO, "path": "src/app.py", "start_line": first["next_start_line"]}
            )
        ).structured_content
    assert first["content"].startswith("line 1\n")
    assert len(first["content"].encode()) <= 14_000
    assert rest["start_line"] == first["end_line"] + 1
    assert rest["content"].startswith(f"line {first['end_line'] + 1}\n")


async def test_html_in_a_file_stays_as_written(fake: FakeGitHub) -> None:
    async with Client(server_for(fake)) as client:
        result = await client.call_tool("get_file_contents", {"repo": REPO, "path": "docs/guide.md", "ref": "main"})
    assert result.structured_content["content"] == "# Guide\n\nUse <b>widgets</b> wisely.\n"
    assert fake.requests[-1].query == {"ref": "main"}


async def test_a_binary_file_is_described_not_shown_and_a_directory_is_listed(fake: FakeGitHub) -> None:
    async with Client(server_for(fake)) as client:
        binary = await client.call_tool("get_file_contents", {"repo": REPO, "path": "assets/logo.png"})
        root = await client.call_tool("get_file_contents", {"repo": REPO})
    assert text_of(binary) == "acme/widgets:assets/logo.png is a binary file of 272 bytes; not shown."
    assert "content" not in binary.structured_content
    assert [(e["type"], e["name"]) for e in root.structured_content["entries"]] == [
        ("dir", "assets"),
        ("dir", "docs"),
        ("dir", "src"),
        ("file", "README.md"),
    ]


async def test_the_tree_is_one_request_and_pages_by_cursor(fake: FakeGitHub) -> None:
    async with Client(server_for(fake)) as client:
        fake.reset_requests()
        first = (await client.call_tool("get_repository_tree", {"repo": REPO, "limit": 5})).structured_content
        second = (
            await client.call_tool("get_repository_tree", {"repo": REPO, "limit": 5, "cursor": first["next_cursor"]})
        ).structured_content
        under = (await client.call_tool("get_repository_tree", {"repo": REPO, "path": "src"})).structured_content
    assert fake.requests[0].path == f"/repos/{REPO}/git/trees/HEAD"
    assert fake.requests[0].query["recursive"] == "1"
    paths = [e["path"] for e in first["items"] + second["items"]]
    assert paths == [
        "README.md",
        "assets",
        "assets/logo.png",
        "docs",
        "docs/guide.md",
        "src",
        "src/app.py",
        "src/util.py",
    ]
    assert [e["path"] for e in under["items"]] == ["src/app.py", "src/util.py"]


async def test_history_commit_and_compare(fake: FakeGitHub) -> None:
    async with Client(server_for(fake)) as client:
        commits = (await client.call_tool("list_commits", {"repo": REPO, "path": "src/util.py"})).structured_content
        commit = await client.call_tool("get_commit", {"repo": REPO, "sha": "main"})
        compare = await client.call_tool("compare_commits", {"repo": REPO, "base": "main", "head": "feature"})
    assert [c["message"] for c in commits["items"]] == ["Add subtract", "Initial commit"]
    assert "Add subtract\n\nAlso documents it." in text_of(commit)
    assert commit.structured_content["parts"] == [
        {"path": "src/util.py", "status": "modified", "additions": 4, "deletions": 0}
    ]
    item = compare.structured_content["item"]
    assert (item["status"], item["ahead_by"], [c["message"] for c in item["commits"]]) == ("ahead", 1, ["Add mul"])


async def test_writing_a_file_needs_the_sha_of_the_one_it_replaces(fake: FakeGitHub) -> None:
    repo = fake.repos[REPO]
    async with Client(server_for(fake)) as client:
        blind = await client.call_tool_mcp(
            "create_or_update_file", {"repo": REPO, "path": "README.md", "content": "gone", "message": "m"}
        )
        current = (await client.call_tool("get_file_contents", {"repo": REPO, "path": "README.md"})).structured_content
        done = await client.call_tool(
            "create_or_update_file",
            {"repo": REPO, "path": "README.md", "content": "# New\n", "message": "Rewrite", "sha": current["sha"]},
        )
    assert blind.is_error
    assert '"sha" wasn\'t supplied' in text_of(blind)
    assert fake.commits[repo.branches["main"]].files["README.md"] == b"# New\n"
    assert text_of(done).startswith(f"Updated README.md in commit {repo.branches['main']}")
    put = [r for r in fake.requests if r.method == "PUT"][-1]
    assert base64.b64decode(put.body["content"]) == b"# New\n"


async def test_push_files_writes_and_deletes_in_one_commit_with_five_requests(fake: FakeGitHub) -> None:
    repo = fake.repos[REPO]
    before = repo.branches["feature"]
    async with Client(server_for(fake)) as client:
        fake.reset_requests()
        result = await client.call_tool(
            "push_files",
            {
                "repo": REPO,
                "branch": "feature",
                "message": "Two files, one gone",
                "files": [{"path": "a.txt", "content": "A\n"}, {"path": "src/new.py", "content": "print('newer')\n"}],
                "delete": ["src/util.py"],
                "expected_sha": before,
            },
        )
    after = repo.branches["feature"]
    assert [(r.method, r.path.rsplit("/", 2)[-2]) for r in fake.requests] == [
        ("GET", "heads"),
        ("GET", "commits"),
        ("POST", "git"),
        ("POST", "git"),
        ("PATCH", "heads"),
    ]
    commit = fake.commits[after]
    assert commit.parents == [before]
    assert commit.message == "Two files, one gone"
    assert commit.files["a.txt"] == b"A\n"
    assert commit.files["src/new.py"] == b"print('newer')\n"
    assert "src/util.py" not in commit.files
    assert text_of(result) == f"Pushed {after} to feature: 2 written, 1 deleted."
    assert fake.requests[-1].body == {"sha": after, "force": False}


async def test_push_files_refuses_when_the_branch_moved(fake: FakeGitHub) -> None:
    async with Client(server_for(fake)) as client:
        fake.reset_requests()
        result = await client.call_tool_mcp(
            "push_files",
            {
                "repo": REPO,
                "branch": "main",
                "message": "m",
                "files": [{"path": "x", "content": "x"}],
                "expected_sha": "f" * 40,
            },
        )
    assert result.is_error
    assert "someone pushed since" in text_of(result)
    assert fake.count("GET") == 1
    assert fake.count() == 1


async def test_delete_file_create_branch_and_fork(fake: FakeGitHub) -> None:
    repo = fake.repos[REPO]
    sha = blob_sha(b"# Widgets\n\nA library of widgets.\n")
    async with Client(server_for(fake)) as client:
        await client.call_tool("delete_file", {"repo": REPO, "path": "README.md", "message": "Drop", "sha": sha})
        branch = await client.call_tool("create_branch", {"repo": REPO, "branch": "topic"})
        fork = await client.call_tool("fork_repository", {"repo": REPO})
    assert "README.md" not in fake.commits[repo.branches["main"]].files
    assert repo.branches["topic"] == repo.branches["main"]
    assert text_of(branch) == f"Created branch topic at {repo.branches['main'][:7]} (from main)."
    assert "octocat/widgets" in fake.repos
    assert "Forking acme/widgets to octocat/widgets" in text_of(fork)


async def test_dot_segments_never_leave_the_server(fake: FakeGitHub) -> None:
    async with Client(server_for(fake)) as client:
        fake.reset_requests()
        for path in ("../secret/contents/.env", "src/../../secret", "."):
            result = await client.call_tool_mcp("get_file_contents", {"repo": REPO, "path": path})
            assert result.is_error
            assert "'..'" in text_of(result)
        dotted = await client.call_tool_mcp("list_branches", {"repo": "acme/.."})
    assert dotted.is_error
    assert fake.count() == 0


async def test_a_file_over_one_megabyte_is_fetched_raw(fake: FakeGitHub) -> None:
    repo = fake.repos[REPO]
    files = dict(fake.commits[repo.branches["main"]].files)
    files["data/big.csv"] = b"".join(b"row %07d\n" % n for n in range(100_000))  # 1.2 MB
    fake.commit(repo, "main", "Add data", files)
    async with Client(server_for(fake)) as client:
        fake.reset_requests()
        result = await client.call_tool(
            "get_file_contents", {"repo": REPO, "path": "data/big.csv", "start_line": 99_999}
        )
    assert [r.headers["accept"] for r in fake.requests] == ["application/vnd.github+json", "application/vnd.github.raw"]
    assert result.structured_content["content"] == "row 0099998\nrow 0099999\n"
    assert result.structured_content["total_lines"] == 100_000


async def test_limits_above_100_are_sent_as_100_and_the_rest_is_paged(fake: FakeGitHub) -> None:
    widgets = fake.repos[REPO]
    files = {**fake.commits[widgets.branches["main"]].files, **{f"gen/f{n:03}.txt": b"x\n" for n in range(150)}}
    fake.commit(widgets, "main", "Generate 150 files", files)
    async with Client(server_for(fake)) as client:
        fake.reset_requests()
        seen: list[str] = []
        cursor = None
        while True:
            result = await client.call_tool("get_commit", {"repo": REPO, "sha": "main", "limit": 300, "cursor": cursor})
            seen += [f["path"] for f in result.structured_content["parts"]]
            cursor = result.structured_content.get("next_cursor")
            if not cursor:
                break
        await client.call_tool("compare_commits", {"repo": REPO, "base": "v1.0", "head": "main", "limit": 250})
    assert sorted(seen) == sorted(f"gen/f{n:03}.txt" for n in range(150))
    assert all(int(r.query["per_page"]) <= 100 for r in fake.requests), [r.query for r in fake.requests]


async def test_a_push_and_a_log_download_report_progress_to_a_client_that_asked(fake: FakeGitHub) -> None:
    heard: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        heard.append((progress, total, message))

    async with Client(server_for(fake)) as client:
        await client.call_tool(
            "push_files",
            {"repo": REPO, "branch": "feature", "message": "Two files", "files": [{"path": "a.txt", "content": "a"}]},
            progress_handler=on_progress,
        )
        pushed = list(heard)
        await client.call_tool("get_job_log", {"repo": REPO, "job_id": 9001}, progress_handler=on_progress)
    assert pushed
    assert pushed[0] == (0, 5, "reading branch feature")
    assert heard[len(pushed)][2] == "downloading the log of job 9001"


async def test_a_commit_without_any_author_says_so_in_words(fake: FakeGitHub) -> None:
    # Issue 28: with GitHub's author and the Git author both null, the text said "by None".
    widgets = fake.repos[REPO]
    sha = fake.commit(widgets, "main", "Imported", dict(fake.commits[widgets.branches["main"]].files), author="")
    async with Client(server_for(fake)) as client:
        commit = await client.call_tool("get_commit", {"repo": REPO, "sha": sha})
    assert "None" not in text_of(commit), text_of(commit)
    assert text_of(commit).startswith(f"commit {sha} by unknown on an unknown date")
    assert "author" not in commit.structured_content["item"]


async def test_a_file_whose_first_nul_comes_late_is_still_binary(fake: FakeGitHub) -> None:
    # Issue 28: only the first 8,000 bytes were looked at; this file's first NUL is at 16,320.
    widgets = fake.repos[REPO]
    late = b"x" * 16_320 + b"\x00\x01\x02" + b"y" * 100
    files = {**fake.commits[widgets.branches["main"]].files, "data.bin": late}
    fake.commit(widgets, "main", "Add data", files)
    async with Client(server_for(fake)) as client:
        result = await client.call_tool("get_file_contents", {"repo": REPO, "path": "data.bin"})
    assert text_of(result) == f"{REPO}:data.bin is a binary file of {len(late):,} bytes; not shown."
    assert "content" not in result.structured_content


async def test_a_large_file_lost_half_way_fails_saying_so(fake: FakeGitHub) -> None:
    repo = fake.repos[REPO]
    fake.commit(repo, "big", "A long log", {"big.log": b"line\n" * 400_000})  # 2 MB: read raw, as a stream
    fake.truncate(r"/contents/big\.log$")
    async with Client(server_for(fake)) as client:
        result = await client.call_tool_mcp(
            "get_file_contents", {"repo": REPO, "path": "big.log", "ref": "big", "start_line": 300_000}
        )
    assert result.is_error
    assert text_of(result).startswith(f"GitHub stopped sending {REPO}:big.log@big half-way"), text_of(result)


async def test_a_large_file_whose_first_nul_comes_late_is_binary_too(fake: FakeGitHub) -> None:
    # Over 1 MB the file is streamed: every chunk read is looked at, not the first 8,000 bytes of the first one.
    widgets = fake.repos[REPO]
    late = b"x" * 79 + b"\n"
    data = late * 204 + b"\x00" + late * 30_000  # the NUL at 16,320, the window full before it; 2.4 MB
    fake.commit(widgets, "big", "Add a large file", {"big.bin": data})
    async with Client(server_for(fake)) as client:
        result = await client.call_tool("get_file_contents", {"repo": REPO, "path": "big.bin", "ref": "big"})
    assert text_of(result) == f"{REPO}:big.bin@big is a binary file of {len(data):,} bytes; not shown."
    assert "content" not in result.structured_content
