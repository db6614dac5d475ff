"""OAuth to MCP servers: how the console is known to each authorization server, and authorizations under way.

People's grants (access and refresh tokens) are their credentials for the server: sealed rows of
`identity_server_credential` with kind "oauth" (console/oauth/grants.py).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from console.db import Base, UtcDateTime, new_id, utcnow


class OAuthClient(Base):
    """The console as a client of one authorization server, registered there dynamically (RFC 7591) for
    one redirect URI; its secret, if it was given one, sealed and bound to this row."""

    __tablename__ = "oauth_client"
    __table_args__ = (UniqueConstraint("issuer", "redirect_uri"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    issuer: Mapped[str] = mapped_column(String(500))
    redirect_uri: Mapped[str] = mapped_column(String(500))
    client_id: Mapped[str] = mapped_column(Text)
    sealed_secret: Mapped[str | None] = mapped_column(Text, default=None)
    auth_method: Mapped[str] = mapped_column(String(40))  # client_secret_basic | client_secret_post | none
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


class OAuthAttempt(Base):
    """One authorization sent to the browser and not yet back: single use, keyed by the SHA-256 of its
    `state`, for one person and one server, and for the browser holding `browser_digest`'s key. What the
    token request will need (the PKCE verifier, endpoints, client, resource, scope) is sealed in `plan`."""

    __tablename__ = "oauth_attempt"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("identity_user.id"), index=True)
    server_id: Mapped[str] = mapped_column(ForeignKey("mcp_server.id"), index=True)
    browser_digest: Mapped[str] = mapped_column(String(64))
    issuer: Mapped[str] = mapped_column(String(500))
    plan: Mapped[str] = mapped_column(Text)
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime())
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
