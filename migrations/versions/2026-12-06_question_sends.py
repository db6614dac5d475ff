"""A question's emails are resolved when each goes out: a notice due at its time (`not_before`) for each
send, and the escalation a question keeps from its policy (whom it goes to when nobody answered).

A notice written before this is due when it was written. Reminders queued before this stay as they were
queued; each attempt still reads its person's address, membership and role again.

Revision ID: 0029
Revises: 0028
Create Date: 2026-12-06
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0029"
down_revision: str | None = "0028"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("elicitation", schema=None) as batch_op:
        batch_op.add_column(sa.Column("escalate_after_minutes", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("escalate_to", sa.String(length=300), nullable=True))
    with op.batch_alter_table("notify_notice", schema=None) as batch_op:
        batch_op.add_column(sa.Column("not_before", sa.DateTime(timezone=True), nullable=True))
    op.execute("UPDATE notify_notice SET not_before = created_at")
    op.drop_index("ix_notify_notice_pending", table_name="notify_notice")
    with op.batch_alter_table("notify_notice", schema=None) as batch_op:
        batch_op.alter_column("not_before", nullable=False)
    op.create_index("ix_notify_notice_due", "notify_notice", ["status", "not_before"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_notify_notice_due", table_name="notify_notice")
    with op.batch_alter_table("notify_notice", schema=None) as batch_op:
        batch_op.drop_column("not_before")
    op.create_index("ix_notify_notice_pending", "notify_notice", ["status", "created_at"], unique=False)
    with op.batch_alter_table("elicitation", schema=None) as batch_op:
        batch_op.drop_column("escalate_to")
        batch_op.drop_column("escalate_after_minutes")
