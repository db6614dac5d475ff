"""Indexes for the runs list and the Decided view: a team's runs and decided questions, newest first.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("run", schema=None) as batch_op:
        batch_op.create_index("ix_run_team_created", ["team_id", "created_at"], unique=False)
    with op.batch_alter_table("elicitation", schema=None) as batch_op:
        batch_op.create_index("ix_elicitation_decided", ["team_id", "decided_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("elicitation", schema=None) as batch_op:
        batch_op.drop_index("ix_elicitation_decided")
    with op.batch_alter_table("run", schema=None) as batch_op:
        batch_op.drop_index("ix_run_team_created")
