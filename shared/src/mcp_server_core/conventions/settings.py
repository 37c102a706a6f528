"""Settings every server shares, read from the environment (prefix per server) and overridden by the CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal, Self

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

__all__ = [
    "MIN_TOKEN_CHARS",
    "LogLevel",
    "ServerSettings",
    "Transport",
    "UpstreamIdentityMode",
    "UpstreamIdentitySettings",
]

MIN_TOKEN_CHARS = 32
"""A static bearer token shorter than this is guessable: refused at start."""

Transport = Literal["stdio", "http"]
UpstreamIdentityMode = Literal["single", "per-user-token", "oauth"]
"""Whom a server acts as upstream: its one configured identity, each caller's own token given as the bearer, or
each caller's token obtained by an OAuth sign-in the server brokers (docs/identity.md)."""
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR"]


def _split_commas(value: object) -> object:
    return [part.strip() for part in value.split(",") if part.strip()] if isinstance(value, str) else value


class ServerSettings(BaseSettings):
    """The family's common settings. A server subclasses this with its own `env_prefix` and fields."""

    model_config = SettingsConfigDict(env_prefix="MCP_SERVER_", extra="ignore", validate_default=True)

    transport: Transport = "stdio"
    host: str = Field("127.0.0.1", description="HTTP bind address; anything but loopback requires a bearer token")
    port: int = Field(8000, ge=0, le=65535)
    path: str = Field("/mcp", pattern=r"^/[A-Za-z0-9/_\-.]*$")
    stateless: bool = Field(False, description="HTTP without sessions, for several workers behind a load balancer")
    resumable: bool = Field(
        False,
        description="HTTP SSE streams a client can resume with Last-Event-ID after a drop (events kept in memory, "
        "or in Redis with state_url)",
    )
    state_url: str | None = Field(
        None,
        pattern=r"^(redis|rediss|unix)://",
        description="HTTP: Redis URL where hosts share resumable-stream events, per-client call leases and toolset "
        "choices (none: each process keeps them in memory)",
    )
    sse_retry_ms: int = Field(
        1000, ge=0, le=600_000, description="with resumable: how long a client waits before reconnecting (SSE retry)"
    )
    workers: int = Field(
        1, ge=1, le=64, description="HTTP worker processes sharing the port (more than one needs --stateless)"
    )
    drain_timeout_s: float = Field(
        10.0, ge=0, le=300, description="on SIGTERM, how long calls in flight may take to finish before exit"
    )
    call_timeout_s: float | None = Field(
        120.0,
        gt=0,
        le=3600,
        description="longest one tool call may take; past it the client gets an isError at once",
    )
    max_body_bytes: int = Field(
        8 * 1024 * 1024,
        ge=1024,
        le=1024 * 1024 * 1024,
        description="largest HTTP request body read; larger ones get 413 before being read whole",
    )
    audit_log: str | None = Field(
        None, description="where audit lines go: 'stderr' or a file path (reopened after logrotate); none: off"
    )
    audit_arguments: bool = Field(
        False, description="put each call's arguments (redacted) in its audit line, not only their digest"
    )
    header_timeout_s: float = Field(
        10.0, gt=0, le=300, description="HTTP: a request's headers must arrive within this; slower connections close"
    )
    body_timeout_s: float = Field(
        30.0, gt=0, le=3600, description="HTTP: a request's body must arrive within this, or 408 and it closes"
    )
    max_buffered_bytes: int = Field(
        64 * 1024 * 1024,
        ge=1024 * 1024,
        description="HTTP: request bytes held at once across all requests, a quarter of it per client; past it, 503 "
        "with Retry-After",
    )
    max_connections: int = Field(
        1000,
        ge=1,
        le=100_000,
        description="HTTP: connections and requests served at once; past it, the connection idle longest is closed, "
        "or 503 if every one has a request in flight",
    )
    max_sessions: int = Field(1000, ge=1, le=1_000_000, description="HTTP: sessions open at once, in total")
    max_sessions_per_client: int = Field(
        32, ge=1, le=100_000, description="HTTP: sessions one credential may hold open; past it, 429 with Retry-After"
    )
    session_idle_timeout_s: float = Field(
        1800.0, gt=0, le=86_400, description="HTTP: a session with no request for this long is closed"
    )
    max_calls_per_client: int = Field(
        4, ge=1, le=1024, description="tool calls one client may run at once; more wait in its own queue"
    )
    max_queued_calls_per_client: int = Field(
        32, ge=0, le=100_000, description="tool calls one client may have waiting; past it, a call fails at once"
    )
    jwt_max_lifetime_s: float = Field(
        86_400.0, gt=0, description="longest JWT lifetime (exp - iat) accepted; tokens must carry exp"
    )
    read_only: bool = False
    toolsets: str | None = Field(None, description="comma-separated toolset names, or 'all' / 'default'")
    log_level: LogLevel = "WARNING"
    auth_token: SecretStr | None = Field(None, description="bearer token HTTP clients must send")
    auth_token_file: Path | None = Field(None, description="file holding bearer tokens, one per line")
    jwt_public_key_file: Path | None = Field(None, description="PEM public key that signs accepted JWT bearer tokens")
    jwks_file: Path | None = Field(
        None, description="JSON Web Key Set file whose keys sign accepted JWTs (re-read on an unknown kid)"
    )
    jwt_issuer: str | None = Field(None, description="required JWT iss; also advertised as the authorization server")
    jwt_audience: str | None = Field(None, description="required JWT aud, e.g. this server's public URL")
    jwt_algorithm: Literal["RS256", "RS384", "RS512", "PS256", "ES256", "ES384", "EdDSA"] = "RS256"
    jwt_required_scopes: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="scopes every JWT must carry, comma-separated"
    )
    public_url: str | None = Field(
        None,
        pattern=r"^https?://[^/\s]+$",
        description="the origin clients reach this server at (behind a gateway); names it in OAuth metadata",
    )
    # NoDecode + the validator below: "a,b" in the environment, not JSON.
    allowed_origins: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="extra browser Origins allowed over HTTP (loopback ones always are)"
    )
    allowed_hosts: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="extra Host header values allowed over HTTP, e.g. a gateway's name"
    )

    allow_cross_writes: bool = Field(
        False, description="a write to another place than its session read goes on without asking the user (flows.py)"
    )
    allow_writes_to: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="targets a write may reach without asking, comma-separated: repositories, channels, folders",
    )

    @field_validator("allowed_origins", "allowed_hosts", "jwt_required_scopes", "allow_writes_to", mode="before")
    @classmethod
    def _split_lists(cls, value: object) -> object:
        return _split_commas(value)

    @model_validator(mode="after")
    def _resumable_needs_sessions(self) -> Self:
        if self.resumable and self.stateless:
            raise ValueError("resumable streams belong to a session; a stateless server has none: pick one")
        return self

    @model_validator(mode="after")
    def _workers_need_stateless_http(self) -> Self:
        if self.workers > 1 and (self.transport != "http" or not self.stateless):
            raise ValueError(
                "several workers need --transport http --stateless: a session lives in one process, and the "
                "kernel hands each connection to any worker (see docs/deploy.md for sessions behind a gateway)"
            )
        return self

    @model_validator(mode="after")
    def _dynamic_workers_need_one_store(self) -> Self:
        # `dynamic` spelled out, not imported: the toolsets module belongs to a layer above this one.
        dynamic = "dynamic" in (word.strip() for word in (self.toolsets or "").split(","))
        if dynamic and self.workers > 1 and self.state_url is None:
            raise ValueError(
                "--toolsets dynamic with several workers needs --state-url redis://...: a caller's toolset choice "
                "would live in the worker that answered, and the next request may reach another that never heard "
                "of it (or run one worker, or name the toolsets at start)"
            )
        return self

    @model_validator(mode="after")
    def _one_jwt_key_source(self) -> Self:
        if self.jwt_public_key_file is not None and self.jwks_file is not None:
            raise ValueError("give either a JWT public key file or a JWKS file, not both")
        return self

    def verifies_callers_upstream(self) -> bool:
        """Whether callers are authenticated by the upstream (their bearer is their upstream token, or an OAuth
        sign-in): the server then has its own auth provider, and bearer tokens and JWTs are not used."""
        return False

    def identifies_callers(self) -> bool:
        """Whether every HTTP caller carries a credential the server checks (a bearer token, a JWT, an upstream
        identity): then each request has a principal to keep per-caller state under."""
        keys = (self.auth_token, self.auth_token_file, self.jwt_public_key_file, self.jwks_file)
        return self.verifies_callers_upstream() or any(key is not None for key in keys)

    def keeps_choices_without_sessions(self) -> bool:
        """Whether stateless HTTP can keep a caller's toolset choice from one request to the next: under its
        principal (so callers need a credential), where every process serving it reads (one worker, or the state
        store). Where it cannot, the discovery tools are left out and the toolsets are those named at start."""
        return self.identifies_callers() and (self.workers == 1 or self.state_url is not None)

    def bearer_tokens(self) -> list[str]:
        """Every token that may authenticate an HTTP client; ValueError for one too short to be a secret.

        In the file: one token per line; blank lines and lines starting with `#`, whatever the indentation, are
        not tokens.
        """
        tokens = [self.auth_token.get_secret_value().strip()] if self.auth_token else []
        if self.auth_token_file is not None:
            lines = [line.strip() for line in self.auth_token_file.read_text().splitlines()]
            tokens += [line for line in lines if line and not line.startswith("#")]
        for token in tokens:
            if len(token) < MIN_TOKEN_CHARS:
                raise ValueError(
                    f"a bearer token of {len(token)} characters is too short to be a secret (at least "
                    f"{MIN_TOKEN_CHARS}): make one with `openssl rand -hex 32` or "
                    "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`"
                )
        return tokens


class UpstreamIdentitySettings(ServerSettings):
    """The settings of a server that can act upstream as each caller (GitHub, Slack): one shape for both."""

    upstream_identity: UpstreamIdentityMode = Field(
        "single",
        description="single: act as the configured token; per-user-token: the HTTP bearer is the caller's own "
        "upstream token; oauth: callers sign in with the upstream in a browser",
    )
    identity_ttl_s: float = Field(
        60.0, ge=1, le=3600, description="how long an upstream's verdict on a caller's token is trusted"
    )
    identity_cache_size: int = Field(
        1024, ge=1, le=1_000_000, description="callers' tokens whose verdict is kept at once; the oldest go first"
    )
    oauth_client_id: str | None = Field(None, description="with oauth: the OAuth app's client id at the upstream")
    oauth_client_secret: SecretStr | None = Field(None, description="with oauth: the OAuth app's client secret")
    oauth_scopes: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="with oauth: the scopes asked of the upstream (default: the server's)"
    )

    @field_validator("oauth_scopes", mode="before")
    @classmethod
    def _split_scopes(cls, value: object) -> object:
        return _split_commas(value)

    def verifies_callers_upstream(self) -> bool:
        return self.upstream_identity != "single"

    @model_validator(mode="after")
    def _one_way_to_authenticate(self) -> Self:
        if self.upstream_identity == "single":
            return self
        mixed = [
            name
            for name, given in (
                ("an auth token", self.auth_token is not None or self.auth_token_file is not None),
                ("a JWT key", self.jwt_public_key_file is not None or self.jwks_file is not None),
            )
            if given
        ]
        if mixed:
            raise ValueError(
                f"--upstream-identity {self.upstream_identity} authenticates callers by the upstream; "
                f"{' and '.join(mixed)} would admit callers whose bearer is no upstream token: give one or the other"
            )
        if self.upstream_identity == "oauth" and not (self.oauth_client_id and self.oauth_client_secret):
            raise ValueError("--upstream-identity oauth needs the OAuth app's client id and client secret")
        if self.upstream_identity == "oauth" and self.workers > 1:
            raise ValueError(
                "--upstream-identity oauth keeps sign-ins in the memory of one process: a sign-in made through one "
                "worker would be unknown to the others; serve it with one worker"
            )
        return self

    def check_serving(self) -> None:
        """ValueError where the upstream identity cannot serve: a caller's token arrives only over HTTP."""
        if self.upstream_identity != "single" and self.transport != "http":
            raise ValueError(
                f"--upstream-identity {self.upstream_identity} needs --transport http: over stdio there is one "
                "user, the one who started the server; give it the token in the environment instead"
            )
