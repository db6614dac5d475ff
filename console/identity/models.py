"""Teams, users, memberships and API tokens."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, ForeignKey, Index, String, Text, UniqueConstraint, false, true
from sqlalchemy.orm import Mapped, Session, mapped_column

from console.audit.chain import EventContext, finds_context
from console.db import Base, UtcDateTime, new_id, utcnow

ROLES = ("member", "approver", "admin", "auditor")


class Team(Base):
    __tablename__ = "identity_team"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    # The roots of its servers that have none of their own (console/mcp/roots.py); None: no roots.
    default_roots_json: Mapped[str | None] = mapped_column(Text, default=None)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


class User(Base):
    """A person. Local accounts have a password hash; single sign-on accounts an issuer and subject."""

    __tablename__ = "identity_user"
    __table_args__ = (UniqueConstraint("oidc_issuer", "oidc_subject"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    password_hash: Mapped[str | None] = mapped_column(String(300), default=None)
    site_admin: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    oidc_issuer: Mapped[str | None] = mapped_column(String(500), default=None)
    oidc_subject: Mapped[str | None] = mapped_column(String(255), default=None)
    # Where notifications go (console/notify): set by an admin, or from single sign-on's `email` claim.
    email: Mapped[str | None] = mapped_column(String(320), default=None)
    email_notifications: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


class Membership(Base):
    __tablename__ = "identity_membership"
    __table_args__ = (UniqueConstraint("user_id", "team_id"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    user_id: Mapped[str] = mapped_column(ForeignKey("identity_user.id"), index=True)
    team_id: Mapped[str] = mapped_column(ForeignKey("identity_team.id"), index=True)
    role: Mapped[str] = mapped_column(String(20))
    # "manual" (an admin or the CLI made it) or "oidc" (the provider's teams claim granted it, and a
    # later sign-in whose claim no longer names the team removes it).
    source: Mapped[str] = mapped_column(String(20), default="manual", server_default="manual")


class ApiToken(Base):
    __tablename__ = "identity_api_token"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    user_id: Mapped[str] = mapped_column(ForeignKey("identity_user.id"), index=True)
    team_id: Mapped[str] = mapped_column(ForeignKey("identity_team.id"))
    name: Mapped[str] = mapped_column(String(100))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    last_used_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    revoked_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    # The `whsec_…` secret that signs callbacks to calls this token starts, sealed, bound to the token.
    sealed_webhook_secret: Mapped[str | None] = mapped_column(Text, default=None)


class WebSession(Base):
    """A browser sign-in; the cookie holds a random 256-bit token, the table only its SHA-256."""

    __tablename__ = "identity_web_session"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)  # sha256 of the cookie token
    user_id: Mapped[str] = mapped_column(ForeignKey("identity_user.id"), index=True)
    csrf_token: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    last_seen_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    # When the person last proved who they are (sign-in or re-authentication); step-up policies read it.
    authenticated_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    auth_method: Mapped[str] = mapped_column(String(20), default="password", server_default="password")
    # What a person sent just before a step-up sent them to re-authenticate (see identity/kept_forms.py).
    kept_form_for: Mapped[str | None] = mapped_column(String(100), default=None)
    kept_form_json: Mapped[str | None] = mapped_column(Text, default=None)
    kept_form_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)


class LoginFailure(Base):
    """One failed password attempt (or one being checked) under a throttling key: see identity/throttle.py."""

    __tablename__ = "identity_login_failure"
    __table_args__ = (Index("ix_identity_login_failure_key_at", "key", "at"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    # "account:<client>:<name>", "client:<client>" or "session:<web session id>"
    key: Mapped[str] = mapped_column(String(200))
    at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


class ServerCredential(Base):
    """A user's own credential for one MCP server, sealed with AES-GCM (see identity/credentials.py)."""

    __tablename__ = "identity_server_credential"
    __table_args__ = (UniqueConstraint("user_id", "server_id"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    user_id: Mapped[str] = mapped_column(ForeignKey("identity_user.id"), index=True)
    server_id: Mapped[str] = mapped_column(ForeignKey("mcp_server.id"))
    kind: Mapped[str] = mapped_column(String(20))  # "bearer" (typed in) or "oauth" (console/oauth/grants.py)
    sealed: Mapped[str] = mapped_column(Text)
    details_json: Mapped[str] = mapped_column(Text, default="{}")  # non-secret facts: scopes, issuer, expiry
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


class OidcLogin(Base):
    """A sign-in started at the OpenID provider: single use, keyed by the SHA-256 of its `state`."""

    __tablename__ = "identity_oidc_login"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    nonce: Mapped[str] = mapped_column(String(100))
    code_verifier: Mapped[str] = mapped_column(String(200))
    next_path: Mapped[str] = mapped_column(Text)
    web_session_id: Mapped[str | None] = mapped_column(String(64), default=None)  # set for re-authentication
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


@finds_context("token")
def _token_context(session: Session, token_id: str) -> EventContext | None:
    token = session.get(ApiToken, token_id)
    return None if token is None else EventContext(team_id=token.team_id)


class SsoAssertion(Base):
    """The ID token of a person's latest sign-in through the OpenID provider, sealed (bound to them): the
    identity assertion the console exchanges at that provider for their enterprise-managed connections
    (console/oauth/enterprise.py). Kept until it expires; one per person."""

    __tablename__ = "identity_sso_assertion"

    user_id: Mapped[str] = mapped_column(ForeignKey("identity_user.id"), primary_key=True)
    issuer: Mapped[str] = mapped_column(String(500))
    sealed: Mapped[str] = mapped_column(Text)
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime())
    saved_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


MAX_IDEMPOTENCY_KEY = 255


class IdempotentRequest(Base):
    """An agent request's idempotency key and what the request created (console/identity/idempotency.py)."""

    __tablename__ = "identity_idempotency_key"
    __table_args__ = (UniqueConstraint("user_id", "key"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    user_id: Mapped[str] = mapped_column(ForeignKey("identity_user.id"))
    key: Mapped[str] = mapped_column(String(MAX_IDEMPOTENCY_KEY))
    fingerprint: Mapped[str] = mapped_column(String(64))
    resource_type: Mapped[str] = mapped_column(String(20))  # run | call | question
    resource_id: Mapped[str] = mapped_column(String(32))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, index=True)
