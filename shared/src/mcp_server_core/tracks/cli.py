"""One command-line shape for every server in the family.

    mcp-server-X [server arguments] [--transport stdio|http] [--host H] [--port P] [--stateless]
                 [--workers N] [--read-only] [--toolsets a,b|all|default] [--log-level L]
                 [--print-config claude|cursor|vscode]
    mcp-server-X [server arguments] tools | call TOOL [ARGS] | skill     the command-line track (commands.py)

Every option is also a setting in the environment under the server's prefix (`MCP_DB_READ_ONLY=1`); the
command line wins. Bearer tokens come from the environment or a file, never from argv, where `ps` shows them.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar
from urllib.parse import urlsplit, urlunsplit

from pydantic import SecretStr, ValidationError

from mcp_server_core.conventions.settings import ServerSettings
from mcp_server_core.tracks.commands import COMMANDS

if TYPE_CHECKING:
    # Imported when serving only: a command, --help and --print-config do not pay for fastmcp.
    from mcp_server_core.protocol.server import ReferenceServer
    from mcp_server_core.protocol.toolsets import Toolset
    from mcp_server_core.tracks.commands import ToolCommands

__all__ = ["ServerSpec", "build", "host_config", "run"]

S = TypeVar("S", bound=ServerSettings)

HOSTS = ("claude", "cursor", "vscode")


@dataclass(frozen=True)
class ServerSpec(Generic[S]):
    """What the family's CLI needs to know about one server."""

    distribution: str
    summary: str
    settings: type[S]
    build: Callable[[S], ReferenceServer] | str
    """How to build the server from its settings: a function, or `"package.module:function"`, imported only when
    serving, so that a command, --help and --print-config never import the server's MCP side (nor fastmcp)."""
    add_arguments: Callable[[argparse.ArgumentParser], None] | None = None
    """Adds the server's own arguments; each `dest` must be a field of `settings`."""
    host_env: Callable[[S], Mapping[str, str]] | None = None
    """What the host must put in the server's environment (its tokens), by name with a placeholder for the
    value, given the settings the command line made. `--print-config` writes these; it never copies a value
    from the environment it runs in."""
    toolsets: Callable[[S], AbstractContextManager[Sequence[Toolset]]] | None = None
    """The command-line track: the server's toolsets built from the settings, without the server (and without
    importing fastmcp); the context closes what they opened (a pool, a client)."""
    skill: str = ""
    """One sentence, for the Agent Skill's description: when an agent should use this server's commands."""
    notes: Sequence[str] = ()
    """What an agent must know before using the commands (the skill's safety notes)."""


def _builder(spec: ServerSpec[S]) -> Callable[[S], ReferenceServer]:
    if not isinstance(spec.build, str):
        return spec.build
    import importlib

    module, _, function = spec.build.partition(":")
    built: Callable[[S], ReferenceServer] = getattr(importlib.import_module(module), function)
    return built


def _parser(spec: ServerSpec[Any]) -> argparse.ArgumentParser:
    prefix = spec.settings.model_config.get("env_prefix", "")
    parser = argparse.ArgumentParser(
        prog=spec.distribution,
        description=spec.summary,
        epilog=f"Every option is also read from the environment as {prefix}<OPTION>, e.g. {prefix}READ_ONLY=1. "
        f"HTTP bearer tokens: {prefix}AUTH_TOKEN or --auth-token-file.",
    )
    if spec.add_arguments is not None:
        spec.add_arguments(parser)
    common = parser.add_argument_group("serving (shared by every server of the family)")
    common.add_argument("--transport", choices=["stdio", "http"], help="stdio (default) or Streamable HTTP")
    common.add_argument("--host", help="HTTP bind address (default 127.0.0.1)")
    common.add_argument("--port", type=int, help="HTTP port (default 8000)")
    common.add_argument("--path", help="HTTP endpoint path (default /mcp)")
    common.add_argument("--stateless", action="store_const", const=True, help="HTTP without sessions (many workers)")
    common.add_argument("--workers", type=int, help="HTTP worker processes on one port (needs --stateless)")
    common.add_argument("--drain-timeout-s", type=float, help="on SIGTERM, seconds in-flight calls may take (10)")
    common.add_argument("--call-timeout-s", type=float, help="longest one tool call may take (default 120)")
    common.add_argument("--max-body-bytes", type=int, help="largest HTTP request body (default 8 MiB)")
    common.add_argument("--resumable", action="store_const", const=True, help="HTTP: SSE streams resume after a drop")
    common.add_argument(
        "--state-url", help="HTTP: Redis URL for state shared by several hosts (events, call limits, toolset choices)"
    )
    common.add_argument("--sse-retry-ms", type=int, help="with --resumable: client reconnect delay (default 1000)")
    common.add_argument("--header-timeout-s", type=float, help="HTTP: seconds for a request's headers (default 10)")
    common.add_argument("--body-timeout-s", type=float, help="HTTP: seconds for a request's body (default 30)")
    common.add_argument("--max-buffered-bytes", type=int, help="HTTP: request bytes held at once (default 64 MiB)")
    common.add_argument("--max-connections", type=int, help="HTTP: connections served at once (default 1000)")
    common.add_argument("--max-sessions", type=int, help="HTTP: sessions open at once (default 1000)")
    common.add_argument("--max-sessions-per-client", type=int, help="HTTP: sessions per credential (default 32)")
    common.add_argument("--session-idle-timeout-s", type=float, help="HTTP: idle session lifetime (default 1800)")
    common.add_argument("--max-calls-per-client", type=int, help="tool calls one client runs at once (default 4)")
    common.add_argument("--max-queued-calls-per-client", type=int, help="calls one client may queue (default 32)")
    common.add_argument("--jwt-max-lifetime-s", type=float, help="longest JWT lifetime accepted (default 86400)")
    common.add_argument("--jwt-algorithm", help="JWT signing algorithm (default RS256)")
    common.add_argument("--jwt-required-scope", dest="jwt_required_scopes", action="append", help="scope JWTs need")
    common.add_argument("--read-only", action="store_const", const=True, help="register no tool that writes")
    common.add_argument("--toolsets", help="comma-separated toolsets, 'all' or 'default'")
    common.add_argument(
        "--allow-cross-writes",
        action="store_const",
        const=True,
        help="a write to another place than its session read goes on without asking the user",
    )
    common.add_argument("--allow-writes-to", help="targets writes reach without asking: repos, channels, folders")
    common.add_argument("--log-level", choices=["DEBUG", "INFO", "WARNING", "ERROR"], help="stderr log level")
    common.add_argument("--audit-log", help="one JSON line per call to 'stderr' or a file (docs/audit.schema.json)")
    common.add_argument(
        "--audit-arguments", action="store_const", const=True, help="audit lines carry the arguments, not only a digest"
    )
    common.add_argument("--auth-token-file", help="file of HTTP bearer tokens, one per line")
    common.add_argument("--jwt-public-key-file", help="PEM public key that signs accepted JWTs")
    common.add_argument("--jwks-file", help="JWKS file whose keys sign accepted JWTs")
    common.add_argument("--jwt-issuer", help="required JWT issuer (its URL is advertised to OAuth clients)")
    common.add_argument("--jwt-audience", help="required JWT audience (default: this server's public URL + path)")
    common.add_argument("--public-url", help="origin clients reach this server at, e.g. https://mcp.example.com")
    common.add_argument("--allowed-origin", dest="allowed_origins", action="append", help="extra allowed Origin")
    common.add_argument("--allowed-host", dest="allowed_hosts", action="append", help="extra allowed Host")
    common.add_argument("--print-config", choices=HOSTS, help="print the host configuration snippet and exit")
    return parser


def add_upstream_identity_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of a server that can act upstream as each caller (`UpstreamIdentitySettings`); the OAuth
    client secret is read from the environment only, where `ps` does not show it."""
    group = parser.add_argument_group("upstream identity (docs/identity.md)")
    group.add_argument(
        "--upstream-identity",
        choices=["single", "per-user-token", "oauth"],
        help="single (default): act as the configured token; per-user-token: each HTTP caller's bearer is their "
        "own upstream token; oauth: callers sign in with the upstream in a browser",
    )
    group.add_argument("--identity-ttl-s", type=float, help="how long a token's verdict is trusted (default 60)")
    group.add_argument("--identity-cache-size", type=int, help="callers' token verdicts kept (default 1024)")
    group.add_argument("--oauth-client-id", help="with oauth: the OAuth app's client id (its secret: environment)")
    group.add_argument("--oauth-scope", dest="oauth_scopes", action="append", help="with oauth: a scope to ask for")


def host_config(
    host: str, distribution: str, args: Sequence[str], env: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The snippet that registers this server, with these arguments and environment, in a host's MCP
    configuration."""
    name = distribution.removeprefix("mcp-server-")
    launch: dict[str, Any] = {"command": "uvx", "args": [distribution, *args]}
    if env:
        launch["env"] = dict(env)
    if host == "vscode":
        return {"servers": {name: {"type": "stdio", **launch}}}
    return {"mcpServers": {name: launch}}


def _url_of(settings: ServerSettings) -> str:
    host = "127.0.0.1" if settings.host in ("0.0.0.0", "::", "") else settings.host  # noqa: S104 - read, not bound
    host = f"[{host}]" if ":" in host else host
    return f"http://{host}:{settings.port}{settings.path}"


def remote_config(host: str, distribution: str, settings: ServerSettings) -> dict[str, Any] | None:
    """The snippet that points a host at this server served over Streamable HTTP (None where the host's file
    takes stdio servers only), with the bearer token as a placeholder when the server requires one."""
    name = distribution.removeprefix("mcp-server-")
    entry: dict[str, Any] = {"url": _url_of(settings)}
    # With per-user-token the bearer is the user's own upstream token; with oauth the host signs in, no header.
    per_user = getattr(settings, "upstream_identity", None) == "per-user-token"
    if settings.auth_token is not None or settings.auth_token_file is not None or per_user:
        entry["headers"] = {"Authorization": f"Bearer {TOKEN_PLACEHOLDER}"}
    if host == "vscode":
        return {"servers": {name: {"type": "http", **entry}}}
    if host == "cursor":
        return {"mcpServers": {name: entry}}
    return None


TOKEN_PLACEHOLDER = "your-token"  # noqa: S105 - the placeholder a user replaces, never a value
PASSWORD_PLACEHOLDER = "your-password"  # noqa: S105 - the placeholder a user replaces, never a value


def settings_in_force(parser: argparse.ArgumentParser, settings: ServerSettings) -> tuple[list[str], dict[str, str]]:
    """The arguments and environment that start a server with `settings`, wherever the host starts it from.

    Built from the settings in force, not from argv: what the shell's environment set (`MCP_FS_READ_ONLY=1`)
    is kept, and a relative path becomes absolute, since a host starts servers from its own working directory
    (`.` from `/` would serve `/`). Secrets never appear: token fields are left out (the spec's `host_env`
    asks for them by name), and a URL's password becomes a placeholder in the environment, not in argv.
    """
    prefix = str(type(settings).model_config.get("env_prefix", ""))
    fields = type(settings).model_fields
    flags = {a.dest: a for a in parser._actions if a.dest in fields}
    positional: list[str] = []
    options: list[str] = []
    env: dict[str, str] = {}
    for name, info in fields.items():
        value = getattr(settings, name)
        if isinstance(value, SecretStr) or value == info.get_default(call_default_factory=True):
            continue
        if isinstance(value, str) and _password_of(value):
            env[f"{prefix}{name}".upper()] = _with_placeholder_password(value)
            continue
        action = flags.get(name)
        if action is None:
            env[f"{prefix}{name}".upper()] = _env_text(value)
        elif not action.option_strings:
            positional += [_arg_text(v) for v in (value if isinstance(value, list) else [value])]
        elif action.const is not None and action.nargs == 0:
            if value == action.const:
                options.append(action.option_strings[0])
            else:  # the opposite of what the flag sets: only the environment can say it
                env[f"{prefix}{name}".upper()] = _env_text(value)
        elif isinstance(value, list) and isinstance(action, argparse._AppendAction):
            for item in value:
                options += [action.option_strings[0], _arg_text(item)]
        else:
            options += [action.option_strings[0], _env_text(value)]
    return positional + options, env


def _arg_text(value: Any) -> str:
    if isinstance(value, Path):
        return os.path.abspath(os.path.expanduser(value))
    if isinstance(value, str) and value.startswith("sqlite:///") and not value.startswith("sqlite:////"):
        # SQLAlchemy reads sqlite:///relative.db against the working directory: pin the file.
        return "sqlite:///" + os.path.abspath(value.removeprefix("sqlite:///"))
    return str(value)


def _env_text(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, list):
        return ",".join(_arg_text(v) for v in value)
    return _arg_text(value)


def _password_of(value: str) -> str | None:
    if "://" not in value:
        return None
    try:
        return urlsplit(value).password
    except ValueError:
        return None


def _with_placeholder_password(url: str) -> str:
    parts = urlsplit(url)
    user = parts.username or ""
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"{user}:{PASSWORD_PLACEHOLDER}@{host}"))


def _command_at(parser: argparse.ArgumentParser, argv: Sequence[str]) -> int | None:
    """Where the command-line track's word (`tools`, `call`, `skill`) stands in argv, if it does: the first
    word that is neither an option nor an option's value nor another positional argument's value spelled
    otherwise (a directory named `call` is `./call`)."""
    takes_value = {option for action in parser._actions if action.nargs != 0 for option in action.option_strings}
    index = 0
    while index < len(argv):
        word = argv[index]
        if word == "--":
            return None
        if word.startswith("-"):
            if word in takes_value:
                index += 1  # its value
        elif word in COMMANDS:
            return index
        index += 1
    return None


def run(spec: ServerSpec[Any], argv: Sequence[str] | None = None) -> None:
    """Parse the command line, then serve, or run one command of the command-line track.

    Meant as the process's main: from the moment it serves (or runs the command's tool) what is loaded is
    frozen out of the cyclic collector for the rest of the process's life (`_start_collecting`).
    """
    collecting = gc.isenabled()
    # Start-up allocates some 170,000 long-lived objects (fastmcp, the MCP SDK, pydantic schemas) and little
    # garbage, yet the cyclic collector walks the growing heap again and again while they load: 150 ms of CPU
    # or more, a tenth of a cold start. So it pauses until the server is built, or the command's domain loaded.
    gc.disable()
    try:
        _run(spec, list(sys.argv[1:] if argv is None else argv), collecting=collecting)
    finally:
        if collecting:
            gc.enable()


def _start_collecting(collecting: bool) -> None:
    """Resume the collector for the rest of the process's life, as the server starts serving or the command
    runs its tool. What start-up made stays for that life (modules, classes, schemas, the server), so it is
    frozen out of every later collection rather than walked by each (and by the one at exit); the few thousand
    cycles start-up left unreachable stay with it (the template's: 2,900 objects, 0.7 MB)."""
    if collecting:
        gc.freeze()
        gc.enable()


def _run(spec: ServerSpec[Any], argv: list[str], *, collecting: bool) -> None:
    parser = _parser(spec)
    at = _command_at(parser, argv) if spec.toolsets is not None else None
    command = argv[at:] if at is not None else []
    if at is not None:
        argv = argv[:at]
    args = vars(parser.parse_args(argv))
    print_config = args.pop("print_config")
    overrides = {key: value for key, value in args.items() if value is not None}
    try:
        settings = spec.settings(**overrides)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors(include_url=False))
        parser.error(problems)
    if command:
        parser.exit(_run_command(spec, settings, command, started=lambda: _start_collecting(collecting)))
    if print_config and settings.transport == "http":
        # A stdio entry would make the host start an HTTP server and wait on its stdout for ever: the host is
        # pointed at the server's URL instead, and the user starts the server.
        entry = remote_config(print_config, spec.distribution, settings)
        if entry is None:
            parser.exit(
                2,
                f"{parser.prog}: Claude Desktop's configuration file starts stdio servers only: run the server "
                "with --transport stdio there, or add its URL as a custom connector in Claude's settings "
                f"({_url_of(settings)}).\n",
            )
        print(json.dumps(entry, indent=2))
        return
    if print_config:
        arguments, env = settings_in_force(parser, settings)
        env.update(spec.host_env(settings) if spec.host_env is not None else {})
        print(json.dumps(host_config(print_config, spec.distribution, arguments, env), indent=2))
        return
    from mcp_server_core.transport.serving import serve, serve_workers

    try:
        if settings.workers > 1:
            from mcp_server_core.transport.http import check_http_settings

            check_http_settings(settings)  # refuse in the parent, before any worker starts
            _start_collecting(collecting)  # before the fork, so the workers share the frozen pages too
            code = serve_workers(lambda: build(spec, settings), settings)
            if code:
                parser.exit(code)
            return
        server = build(spec, settings)
        serve(server, settings, configured=lambda: _start_collecting(collecting))
    except ValueError as exc:
        parser.exit(2, f"{spec.distribution}: error: {exc}\n")
    except KeyboardInterrupt:
        pass


def _commands(spec: ServerSpec[Any], settings: ServerSettings, toolsets: Sequence[Toolset]) -> ToolCommands:
    """The command-line track of `spec` over `toolsets`: what `call` runs and what the Skill teaches."""
    from mcp_server_core.tracks.commands import ToolCommands

    return ToolCommands(
        spec.distribution,
        spec.summary,
        toolsets,
        skill=spec.skill or spec.summary,
        notes=spec.notes,
        enabled=settings.toolsets,
        read_only=settings.read_only,
        call_timeout_s=settings.call_timeout_s,
    )


def build(spec: ServerSpec[S], settings: S) -> ReferenceServer:
    """The server as `run` serves it: built from its settings and, when it has a command-line track, serving that
    track's Agent Skill over MCP (`skill://NAME/SKILL.md`, `skills/list`), the text `NAME skill` prints."""
    server = _builder(spec)(settings)
    if spec.toolsets is not None:
        from mcp_server_core.tracks.skills import serve_skill

        # The server's own toolsets: the same definitions as the command track's, without opening what
        # `spec.toolsets` opens (a pool, a client) a second time.
        serve_skill(server, lambda: _commands(spec, settings, server.toolsets.available))
    return server


def _run_command(
    spec: ServerSpec[Any], settings: ServerSettings, argv: Sequence[str], *, started: Callable[[], None]
) -> int:
    from mcp_server_core.conventions.errors import configure_logging

    assert spec.toolsets is not None
    configure_logging(settings.log_level)  # stderr, redacted, as the server's; stdout holds the result only
    try:
        with spec.toolsets(settings) as toolsets:
            commands = _commands(spec, settings, toolsets)
            started()  # the domain is loaded; the tool's own garbage is collected as it runs
            code = commands.main(argv)
            sys.stdout.flush()
            return code
    except BrokenPipeError:  # `| head` stopped reading: what it read is what was wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except ValueError as exc:  # a setting the toolsets cannot start with (no token, a privileged role)
        print(f"{spec.distribution}: error: {exc}", file=sys.stderr)
        return 2
