"""Idempotency keys of agent requests.

Revision ID: 0026
Revises: 0025
Create Date: 2026-12-05
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0026"
down_revision: str | None = "0025"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "identity_idempotency_key",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("user_id", sa.String(length=32), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("resource_type", sa.String(length=20), nullable=False),
        sa.Column("resource_id", sa.String(length=32), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"], ["identity_user.id"], name=op.f("fk_identity_idempotency_key_user_id_identity_user")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_identity_idempotency_key")),
        sa.UniqueConstraint("user_id", "key", name=op.f("uq_identity_idempotency_key_user_id")),
    )
    op.create_index(
        op.f("ix_identity_idempotency_key_created_at"),
        "identity_idempotency_key",
        ["created_at"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_identity_idempotency_key_created_at"), table_name="identity_idempotency_key")
    op.drop_table("identity_idempotency_key")
