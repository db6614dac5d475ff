"""People's email addresses, teams' notification channels and the notification outbox.

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-05
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0024"
down_revision: str | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("identity_user", schema=None) as batch_op:
        batch_op.add_column(sa.Column("email", sa.String(length=320), nullable=True))
        batch_op.add_column(
            sa.Column("email_notifications", sa.Boolean(), server_default=sa.true(), nullable=False)
        )
    op.create_table(
        "notify_delivery",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("team_id", sa.String(length=32), nullable=False),
        sa.Column("event", sa.String(length=40), nullable=False),
        sa.Column("subject_id", sa.String(length=32), nullable=False),
        sa.Column("channel", sa.String(length=20), nullable=False),
        sa.Column("user_id", sa.String(length=32), nullable=True),
        sa.Column("recipient", sa.Text(), nullable=False),
        sa.Column("content_json", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("not_before", sa.DateTime(timezone=True), nullable=False),
        sa.Column("give_up_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("sent_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["team_id"], ["identity_team.id"], name=op.f("fk_notify_delivery_team_id_identity_team")
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["identity_user.id"], name=op.f("fk_notify_delivery_user_id_identity_user")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_notify_delivery")),
    )
    op.create_index("ix_notify_delivery_due", "notify_delivery", ["status", "not_before"], unique=False)
    op.create_index(op.f("ix_notify_delivery_team_id"), "notify_delivery", ["team_id"], unique=False)
    op.create_table(
        "notify_channel",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("team_id", sa.String(length=32), nullable=False),
        sa.Column("kind", sa.String(length=10), nullable=False),
        sa.Column("sealed_url", sa.Text(), nullable=False),
        sa.Column("host", sa.String(length=300), nullable=False),
        sa.Column("events_json", sa.Text(), nullable=False),
        sa.Column("sealed_secret", sa.Text(), nullable=True),
        sa.Column("internal", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["team_id"], ["identity_team.id"], name=op.f("fk_notify_channel_team_id_identity_team")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_notify_channel")),
    )
    op.create_index(op.f("ix_notify_channel_team_id"), "notify_channel", ["team_id"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_notify_channel_team_id"), table_name="notify_channel")
    op.drop_table("notify_channel")
    op.drop_index(op.f("ix_notify_delivery_team_id"), table_name="notify_delivery")
    op.drop_index("ix_notify_delivery_due", table_name="notify_delivery")
    op.drop_table("notify_delivery")
    with op.batch_alter_table("identity_user", schema=None) as batch_op:
        batch_op.drop_column("email_notifications")
        batch_op.drop_column("email")
