"""Settings: every knob of the console, read from `CONSOLE_*` environment variables."""

from __future__ import annotations

import ipaddress
from typing import Literal, Self
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

MIB = 1024 * 1024
MAX_RESULT_BYTES = 8 * MIB  # the default of CONSOLE_MAX_RESULT_BYTES
CONNECT_TIMEOUT_SECONDS = 20.0  # the default of CONSOLE_CONNECT_TIMEOUT_SECONDS


class Settings(BaseSettings):
    """Configuration of one console process; `get_settings()` is the only reader of the environment."""

    model_config = SettingsConfigDict(env_prefix="CONSOLE_", extra="ignore")

    database_url: str = Field(
        default="sqlite+aiosqlite:///console.db",
        description="SQLAlchemy URL; SQLite (aiosqlite) by default, PostgreSQL via postgresql+psycopg://...",
    )
    env: Literal["production", "dev", "test"] = Field(
        default="production", description="dev relaxes nothing yet; test enables fault hooks"
    )
    secret_key: SecretStr | None = Field(
        default=None,
        min_length=32,
        description="at least 32 random characters; seals server header/env values and users' credentials",
    )
    allow_private_server_urls: bool = Field(
        default=False,
        description="let every HTTP server use loopback, link-local and private addresses, not only internal",
    )
    base_url: str = Field(default="http://127.0.0.1:8000", description="public URL used in answer links")
    oauth_client_metadata_url: str | None = Field(
        default=None,
        description="where authorization servers fetch the console's OAuth Client ID Metadata Document "
        "(https); default: <base_url>/oauth/client-metadata.json when the base URL is https",
    )
    round_cap: int = Field(default=10, ge=1, description="most input_required rounds one call may take")
    elicitation_ttl_seconds: float = Field(
        default=24 * 3600,
        gt=0,
        description="a pending question expires after this unless its policy sets another time",
    )
    request_timeout_seconds: float = Field(default=60, gt=0, description="timeout of one MCP request")
    connect_timeout_seconds: float = Field(
        default=CONNECT_TIMEOUT_SECONDS,
        gt=0,
        description="how long one attempt to connect to an MCP server may take (starting it, or its TCP "
        "connection, and the handshake) before it counts as unreachable",
    )
    call_log_level: Literal[
        "off", "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"
    ] = Field(
        default="info",
        description="the least severe log messages of its servers a call keeps (its latest 50, on the run "
        "page and in the API); off keeps none",
    )
    legacy_hold_seconds: float = Field(
        default=600,
        gt=0,
        description="how long a question an older server (MCP 2025-11-25) pushed mid-call is held open for "
        "an answer (its policy's expiry, when shorter, wins); then the server is told its expiry action",
    )
    gateway_hold_seconds: float = Field(
        default=300,
        gt=0,
        description="how long the MCP gateway holds an agent's request open while people decide",
    )
    gateway_poll_seconds: float | None = Field(
        default=None,
        ge=0,
        description="close a held 2025-11-25 agent's response stream after this long, and again as long as "
        "it waits, for its client to resume with Last-Event-ID (SEP-1699 polling); unset: never",
    )
    max_params_bytes: int = Field(default=4 * MIB, description="largest params of a call an agent may send")
    max_input_requests_bytes: int = Field(
        default=4 * MIB, description="largest inputRequests a server may send"
    )
    max_request_state_bytes: int = Field(
        default=4 * MIB, description="largest requestState a server may send"
    )
    max_result_bytes: int = Field(
        default=MAX_RESULT_BYTES,
        ge=64 * 1024,
        description="largest message (a result, or anything else) read from an MCP server; reading stops "
        "there and the request fails",
    )
    lease_seconds: float = Field(default=30, gt=0, description="how long a dispatcher owns a claimed resume")
    database_pool_size: int = Field(
        default=10,
        ge=1,
        le=1000,
        description="most PostgreSQL connections a console process uses at once for requests and its work",
    )
    dispatch_poll_seconds: float = Field(
        default=0.5, gt=0, description="how often the dispatcher looks for work it was not woken for"
    )
    dispatch_attempts: int = Field(
        default=5, ge=1, description="sends tried while an MCP server is unreachable before the call fails"
    )
    idempotent_resends: int = Field(
        default=3,
        ge=0,
        le=20,
        description="times a request to a server marked idempotent whose outcome was lost is sent again "
        "without a person (0: never, a person chooses as for any server); never a request people decided",
    )
    database_retry_seconds: float = Field(
        default=300,
        gt=0,
        description="how long a server's reply waits to be recorded while the database is unreachable; "
        "past it the call is interrupted once its lease runs out",
    )
    session_idle_minutes: float = Field(
        default=30, gt=0, description="a browser session ends after this idle time"
    )
    session_absolute_hours: float = Field(
        default=12, gt=0, description="a browser session ends this long after sign-in"
    )
    trusted_proxies: str = Field(
        default="",
        description="comma-separated IPs or CIDR networks of reverse proxies whose X-Forwarded-For and "
        "X-Forwarded-Proto are believed; empty (the default) believes no one, not even loopback",
    )
    test_fault: Literal[
        "", "crash_after_claim", "crash_while_sending", "crash_after_send", "housekeeping_fails"
    ] = Field(default="", description="test-only fault hook for the dispatcher; ignored unless env is test")
    oidc_issuer: str | None = Field(
        default=None, description="issuer URL of the OpenID provider; turns on single sign-on"
    )
    oidc_client_id: str | None = Field(default=None, description="the console's client id at the provider")
    oidc_client_secret: SecretStr | None = Field(
        default=None, description="the console's client secret; none for a public client (PKCE only)"
    )
    oidc_teams_claim: str | None = Field(
        default=None, description='ID token claim listing "team" or "team:role" memberships, e.g. groups'
    )
    oidc_provider_name: str = Field(
        default="single sign-on", max_length=60, description='shown as "Sign in with <name>"'
    )
    local_sign_in: bool = Field(default=True, description="whether people may sign in with a password")
    audit_signing_key: SecretStr | None = Field(
        default=None,
        description="Ed25519 key signing audit checkpoints: base64 of 32 bytes (`audit keygen`) or PEM",
    )
    audit_signing_key_file: str | None = Field(
        default=None, description="a file holding the audit signing key, instead of CONSOLE_AUDIT_SIGNING_KEY"
    )
    audit_checkpoint_every: int = Field(
        default=100, ge=1, description="a signed audit checkpoint after this many events..."
    )
    audit_checkpoint_minutes: float = Field(
        default=5, gt=0, description="...or with the first event this many minutes after the last checkpoint"
    )
    audit_witness_file: str | None = Field(
        default=None,
        description="a file, kept apart from the database and its backups, where every chained audit "
        "event's seq, hash and call are appended, so a database restored from an older backup is found "
        "out and the calls answered or sent since are held; unset: no witness",
    )
    approval_signing_key: SecretStr | None = Field(
        default=None,
        description="Ed25519 key signing the approval attestations sent to MCP servers: base64 of 32 bytes "
        "or PEM, never the audit signing key; unset: a key derived from CONSOLE_SECRET_KEY",
    )
    approval_previous_keys: str = Field(
        default="",
        description="comma-separated public keys (base64 or a JWK's x) the console signed attestations "
        "with before a rotation: /.well-known/jwks.json keeps listing them",
    )
    approval_minutes: int = Field(
        default=10, ge=1, le=1440, description="how long an MCP server accepts an approval attestation"
    )
    smtp_url: SecretStr | None = Field(
        default=None,
        description="the SMTP server notification emails go through: smtp://user:pass@host:587 (STARTTLS "
        "when offered) or smtps://…:465 (TLS); unset: no email",
    )
    mail_from: str | None = Field(
        default=None, max_length=320, description="the From address of those emails"
    )
    notify_give_up_hours: float = Field(
        default=24, gt=0, le=24 * 30, description="a notification not delivered within this time is given up"
    )
    metrics_token: SecretStr | None = Field(
        default=None,
        min_length=16,
        description="the bearer token a Prometheus scraper sends to /metrics; unset: no /metrics",
    )
    log_format: Literal["text", "json"] = Field(
        default="text", description="json: one JSON object a line, with the call's id where there is one"
    )

    @model_validator(mode="after")
    def _check_sign_in(self) -> Self:
        if (self.oidc_issuer is None) != (self.oidc_client_id is None):
            raise ValueError("set both CONSOLE_OIDC_ISSUER and CONSOLE_OIDC_CLIENT_ID, or neither")
        if self.oidc_issuer is not None and not secure_url(self.oidc_issuer):
            raise ValueError("CONSOLE_OIDC_ISSUER must be an https URL (http only to a loopback address)")
        if not self.local_sign_in and self.oidc_issuer is None:
            raise ValueError("CONSOLE_LOCAL_SIGN_IN=false needs single sign-on (CONSOLE_OIDC_ISSUER)")
        return self

    @model_validator(mode="after")
    def _check_mail(self) -> Self:
        if self.smtp_url is None:
            return self
        parts = urlsplit(self.smtp_url.get_secret_value())
        try:
            parts.port  # noqa: B018  # raises on a port that is not a number
        except ValueError:
            parts = parts._replace(netloc="")
        if parts.scheme not in ("smtp", "smtps") or not parts.hostname:
            raise ValueError("CONSOLE_SMTP_URL must be smtp://[user:pass@]host[:port] or smtps://…")
        if not self.mail_from or "@" not in self.mail_from:
            raise ValueError("CONSOLE_MAIL_FROM must be set to an email address with CONSOLE_SMTP_URL")
        return self

    @model_validator(mode="after")
    def _check_proxies(self) -> Self:
        for entry in self.trusted_proxy_list:
            try:
                ipaddress.ip_network(entry)  # strict, as uvicorn's proxy middleware reads it
            except ValueError as exc:
                raise ValueError(
                    f"CONSOLE_TRUSTED_PROXIES: {entry!r} is not an IP address or CIDR network ({exc})"
                ) from None
        return self

    @property
    def trusted_proxy_list(self) -> list[str]:
        return [entry.strip() for entry in self.trusted_proxies.split(",") if entry.strip()]

    @property
    def oidc_enabled(self) -> bool:
        return self.oidc_issuer is not None and self.oidc_client_id is not None


def secure_url(url: str) -> bool:
    """https, or http to a loopback address (a provider on the same machine, as in tests)."""
    parts = urlsplit(url)
    if parts.query or parts.fragment or not parts.hostname:
        return False
    if parts.scheme == "https":
        return True
    if parts.scheme != "http":
        return False
    if parts.hostname == "localhost":
        return True
    try:
        return ipaddress.ip_address(parts.hostname).is_loopback
    except ValueError:
        return False


def secret_text(settings: Settings) -> str | None:
    return settings.secret_key.get_secret_value() if settings.secret_key is not None else None


def get_settings() -> Settings:
    """Settings from the environment."""
    return Settings()
