"""Escalation in policies, callbacks to agents (a call's callback URL, a token's webhook secret) and the
notices the notifier fans out into deliveries.

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-05
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0025"
down_revision: str | None = "0024"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("policy_rule", schema=None) as batch_op:
        batch_op.add_column(sa.Column("escalate_after_minutes", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("escalate_to", sa.String(length=300), nullable=True))
    with op.batch_alter_table("call", schema=None) as batch_op:
        batch_op.add_column(sa.Column("callback_url", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("callback_token_id", sa.String(length=32), nullable=True))
        batch_op.add_column(
            sa.Column("asked_people", sa.Boolean(), server_default=sa.false(), nullable=False)
        )
    with op.batch_alter_table("identity_api_token", schema=None) as batch_op:
        batch_op.add_column(sa.Column("sealed_webhook_secret", sa.Text(), nullable=True))
    op.create_table(
        "notify_notice",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("event", sa.String(length=40), nullable=False),
        sa.Column("subject_id", sa.String(length=32), nullable=False),
        sa.Column("call_id", sa.String(length=32), nullable=False),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_notify_notice")),
    )
    op.create_index("ix_notify_notice_pending", "notify_notice", ["status", "created_at"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_notify_notice_pending", table_name="notify_notice")
    op.drop_table("notify_notice")
    with op.batch_alter_table("identity_api_token", schema=None) as batch_op:
        batch_op.drop_column("sealed_webhook_secret")
    with op.batch_alter_table("call", schema=None) as batch_op:
        batch_op.drop_column("asked_people")
        batch_op.drop_column("callback_token_id")
        batch_op.drop_column("callback_url")
    with op.batch_alter_table("policy_rule", schema=None) as batch_op:
        batch_op.drop_column("escalate_to")
        batch_op.drop_column("escalate_after_minutes")
