"""Settings: every knob of the console, read from `CONSOLE_*` environment variables."""

from __future__ import annotations

import ipaddress
from typing import Literal, Self
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

MIB = 1024 * 1024
MAX_RESULT_BYTES = 8 * MIB  # the default of CONSOLE_MAX_RESULT_BYTES
CONNECT_TIMEOUT_SECONDS = 20.0  # the default of CONSOLE_CONNECT_TIMEOUT_SECONDS


class Settings(BaseSettings):
    """Configuration of one console process; `get_settings()` is the only reader of the environment."""

    model_config = SettingsConfigDict(env_prefix="CONSOLE_", extra="ignore")

    database_url: str = Field(
        default="sqlite+aiosqlite:///console.db",
        description="SQLite (`sqlite:///path/to/console.db`) or PostgreSQL "
        "(`postgresql://user:password@host/database`, `postgres://` too); the console picks "
        "its drivers (aiosqlite, psycopg) whatever driver the URL names, and refuses any "
        "other database",
    )
    env: Literal["production", "dev", "test"] = Field(
        default="production",
        description="`production`, `dev` (link questions may point at http:// on a loopback address, as "
        "the demo's do) or `test` (enables the dispatcher's fault hooks, CONSOLE_TEST_FAULT)",
    )
    secret_key: SecretStr | None = Field(
        default=None,
        min_length=32,
        description="at least 32 random characters; seals servers' header and environment values and "
        "users' server credentials (AES-GCM). Keep it stable: what was sealed under one key "
        "cannot be read under another",
    )
    allow_private_server_urls: bool = Field(
        default=False,
        description="`true` lets every HTTP server use loopback, link-local, private and unique-local "
        "addresses; otherwise only servers a site admin marks internal may",
    )
    base_url: str = Field(
        default="http://127.0.0.1:8000",
        description="the console's public URL, used in answer links and emails; unset, `console serve` "
        "uses the address it listens on",
    )
    oauth_client_metadata_url: str | None = Field(
        default=None,
        description="where authorization servers fetch the console's OAuth Client ID Metadata Document "
        "(https, with a path; the console serves it at `/oauth/client-metadata.json`); unset: "
        "that path under CONSOLE_BASE_URL when it is https, else the console has none and "
        "registers itself (RFC 7591)",
    )
    round_cap: int = Field(
        default=10, ge=1, description="most input_required rounds one call may take before it is abandoned"
    )
    elicitation_ttl_seconds: float = Field(
        default=24 * 3600,
        gt=0,
        description="how long a question waits unless its policy sets another time; then it is answered "
        "`cancel` (or the policy's expiry answer)",
    )
    request_timeout_seconds: float = Field(
        default=60, gt=0, description="timeout of one request to an MCP server"
    )
    connect_timeout_seconds: float = Field(
        default=CONNECT_TIMEOUT_SECONDS,
        gt=0,
        description="how long one attempt to connect to an MCP server may take (starting it over stdio, "
        "or its TCP connection, and the handshake) before it counts as unreachable; a send "
        "tries CONSOLE_DISPATCH_ATTEMPTS times, 2, 4, 8 ... s apart",
    )
    call_log_level: Literal[
        "off", "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"
    ] = Field(
        default="info",
        description="the least severe log messages of its servers a call keeps (its newest 50, on the run "
        "page and in the API's call JSON); `off` keeps none",
    )
    legacy_hold_seconds: float = Field(
        default=600,
        gt=0,
        description="how long a question an older server (MCP 2025-11-25) pushed mid-call is held open "
        "for an answer (its policy's expiry, when shorter, wins); then the server is told its "
        "expiry action",
    )
    gateway_hold_seconds: float = Field(
        default=300,
        gt=0,
        description="how long the MCP gateway holds an agent's request open while people decide; then the "
        "result says it still waits and how to wait again (`console__await`)",
    )
    gateway_poll_seconds: float | None = Field(
        default=None,
        ge=0,
        description="close a held 2025-11-25 agent's response stream after this long, and again as long "
        "as it waits (at most once a second), for its client to resume with Last-Event-ID "
        "(SEP-1699 polling); unset: never",
    )
    gateway_return_seconds: float = Field(
        default=30,
        gt=0,
        description="how long a 2025-11-25 agent whose connection closed while its request was held has "
        "to come back (resume the response stream with Last-Event-ID, or send anything on its "
        "session) before the call it drove is withdrawn as given up",
    )
    max_params_bytes: int = Field(
        default=4 * MIB, description="largest call body an agent may send (413 above)"
    )
    max_input_requests_bytes: int = Field(
        default=4 * MIB, description="largest `inputRequests` a server may send (the call fails above)"
    )
    max_request_state_bytes: int = Field(
        default=4 * MIB, description="largest `requestState` a server may send (the call fails above)"
    )
    max_result_bytes: int = Field(
        default=MAX_RESULT_BYTES,
        ge=64 * 1024,
        description="largest message (a result, or anything else) read from an MCP server; reading stops "
        "there and the request fails with an error naming this setting",
    )
    lease_seconds: float = Field(
        default=30,
        gt=0,
        description="how long a dispatcher owns a claimed job before another may take it; renewed every "
        "third of it while the request is out, so a dead process's work is taken over (or its "
        "call interrupted) within one lease",
    )
    database_pool_size: int = Field(
        default=10,
        ge=1,
        le=1000,
        description="most PostgreSQL connections each console process (each of `serve --workers`, each "
        "`console worker`) uses at once for its requests and background work; a transaction "
        "waits for a free one rather than open more",
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
        "without a person (0: never, a person chooses as for any server); never a request "
        "people decided",
    )
    database_retry_seconds: float = Field(
        default=300,
        gt=0,
        description="how long a server's reply waits to be recorded while the database is unreachable; "
        "past it the call is interrupted once its lease runs out",
    )
    session_idle_minutes: float = Field(
        default=30, gt=0, description="a browser session ends after this long without a request"
    )
    session_absolute_hours: float = Field(
        default=12, gt=0, description="a browser session ends this long after sign-in, however active"
    )
    trusted_proxies: str = Field(
        default="",
        description="comma-separated IPs or CIDR networks of your reverse proxies, e.g. "
        "`127.0.0.1,10.0.0.0/8`: only for requests from these are X-Forwarded-For (the "
        "right-most address not in the list is the client, which sign-in throttling and the "
        "audit log use) and X-Forwarded-Proto believed; empty believes no one, not even "
        "loopback",
    )
    test_fault: Literal[
        "", "crash_after_claim", "crash_while_sending", "crash_after_send", "housekeeping_fails"
    ] = Field(
        default="",
        description="test-only fault hook of the dispatcher (`housekeeping_fails`: its housekeeping "
        "raises an error that is not the database's); ignored unless CONSOLE_ENV is `test`",
    )
    oidc_issuer: str | None = Field(
        default=None,
        description="issuer URL of the OpenID provider (https; http only to a loopback address); turns on "
        "single sign-on",
    )
    oidc_client_id: str | None = Field(
        default=None, description="the console's client id at the provider (required with the issuer)"
    )
    oidc_client_secret: SecretStr | None = Field(
        default=None,
        description="the console's client secret (`client_secret_basic`); unset for a public client that "
        "relies on PKCE alone",
    )
    oidc_teams_claim: str | None = Field(
        default=None,
        description='ID token claim listing team memberships as `"team"` or `"team:role"`, e.g. `groups`',
    )
    oidc_provider_name: str = Field(
        default="single sign-on", max_length=60, description='the sign-in button says "Sign in with" this'
    )
    local_sign_in: bool = Field(
        default=True,
        description="whether people may sign in with a password; `false` removes the password form (needs "
        "single sign-on)",
    )
    audit_signing_key: SecretStr | None = Field(
        default=None,
        description="Ed25519 private key signing audit checkpoints: base64 of 32 bytes (`console audit "
        "keygen`) or PEM; without it no checkpoints are written, and the audit page and "
        "`console audit verify` say so",
    )
    audit_signing_key_file: str | None = Field(
        default=None, description="a file holding the audit signing key, instead of CONSOLE_AUDIT_SIGNING_KEY"
    )
    audit_checkpoint_every: int = Field(
        default=100, ge=1, description="a signed audit checkpoint after this many events..."
    )
    audit_checkpoint_minutes: float = Field(
        default=5,
        gt=0,
        description="...or with the first event this many minutes after the previous checkpoint",
    )
    audit_witness_file: str | None = Field(
        default=None,
        description="a file, kept apart from the database and its backups, where every chained audit "
        "event's seq, hash and call are appended, so a database restored from an older backup "
        "is found out and the calls answered or sent since are held; unset: no witness",
    )
    approval_signing_key: SecretStr | None = Field(
        default=None,
        description="Ed25519 private key signing the approval attestations the console puts in "
        '`_meta["io.approval-console/approval"]` of the MCP requests people approved: base64 '
        "of 32 bytes or PEM, never the audit signing key (refused at start); unset: a key "
        "derived from CONSOLE_SECRET_KEY, else no attestations. Servers verify them with the "
        "public key at `/.well-known/jwks.json`",
    )
    approval_previous_keys: str = Field(
        default="",
        description="comma-separated public keys (base64 of 32 bytes, or a JWK's x) the console signed "
        "attestations with before a rotation: `/.well-known/jwks.json` keeps listing them, so "
        "what they signed still verifies until it expires",
    )
    approval_minutes: int = Field(
        default=10,
        ge=1,
        le=1440,
        description="how long an MCP server accepts an approval attestation after it was signed",
    )
    smtp_url: SecretStr | None = Field(
        default=None,
        description="the SMTP server notification emails go through: `smtp://user:pass@host:587` "
        "(STARTTLS when offered, and required before a password goes to another machine) or "
        "`smtps://user:pass@host:465` (TLS); unset: no email",
    )
    mail_from: str | None = Field(
        default=None,
        max_length=320,
        description="the From address of those emails (required with CONSOLE_SMTP_URL)",
    )
    notify_give_up_hours: float = Field(
        default=24,
        gt=0,
        le=24 * 30,
        description="a notification not delivered within this time is given up (`notification_failed` in "
        "the audit log)",
    )
    metrics_token: SecretStr | None = Field(
        default=None,
        min_length=16,
        description="the bearer token a Prometheus scraper sends to `/metrics`; unset: `/metrics` answers "
        "404",
    )
    log_format: Literal["text", "json"] = Field(
        default="text",
        description="`json`: each log line one JSON object (`time`, `level`, `logger`, `message`, and "
        "`call_id` where the line is about a call)",
    )

    @field_validator("database_url")
    @classmethod
    def _with_the_consoles_driver(cls, text: str) -> str:
        return database_url(text)

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


DRIVERS = {"sqlite": "sqlite+aiosqlite", "postgresql": "postgresql+psycopg"}


def database_url(text: str) -> str:
    """The URL as the console connects: `sqlite:///x.db`, `postgres://…` and any driver named for SQLite
    or PostgreSQL become the drivers the console ships with.

    Raises:
        ValueError: not a URL of SQLite or PostgreSQL.
    """
    try:
        url = make_url(text.strip())
    except ArgumentError:
        raise ValueError(
            "not a database URL: write sqlite:///path/to/console.db or postgresql://user@host/database"
        ) from None
    backend = "postgresql" if url.get_backend_name() == "postgres" else url.get_backend_name()
    if backend not in DRIVERS:
        raise ValueError(f"{backend} is not supported: the console keeps its data in SQLite or PostgreSQL")
    return url.set(drivername=DRIVERS[backend]).render_as_string(hide_password=False)
