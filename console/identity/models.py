"""Teams, users, memberships and API tokens."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from console.db import Base, UtcDateTime, new_id, utcnow

ROLES = ("member", "approver", "admin", "auditor")


class Team(Base):
    __tablename__ = "identity_team"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


class User(Base):
    __tablename__ = "identity_user"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    password_hash: Mapped[str | None] = mapped_column(String(300), default=None)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


class Membership(Base):
    __tablename__ = "identity_membership"
    __table_args__ = (UniqueConstraint("user_id", "team_id"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    user_id: Mapped[str] = mapped_column(ForeignKey("identity_user.id"), index=True)
    team_id: Mapped[str] = mapped_column(ForeignKey("identity_team.id"), index=True)
    role: Mapped[str] = mapped_column(String(20))


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
