"""Browser sign-in: server-side web sessions and the failed sign-ins that throttle guessing.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "identity_login_failure",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_identity_login_failure")),
    )
    with op.batch_alter_table("identity_login_failure", schema=None) as batch_op:
        batch_op.create_index("ix_identity_login_failure_key_at", ["key", "at"], unique=False)

    op.create_table(
        "identity_web_session",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("user_id", sa.String(length=32), nullable=False),
        sa.Column("csrf_token", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_seen_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["user_id"], ["identity_user.id"], name=op.f("fk_identity_web_session_user_id_identity_user")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_identity_web_session")),
    )
    with op.batch_alter_table("identity_web_session", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_identity_web_session_user_id"), ["user_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("identity_web_session", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_identity_web_session_user_id"))

    op.drop_table("identity_web_session")
    with op.batch_alter_table("identity_login_failure", schema=None) as batch_op:
        batch_op.drop_index("ix_identity_login_failure_key_at")

    op.drop_table("identity_login_failure")
