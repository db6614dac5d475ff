"""A call may be run by its server as a task (the tasks extension of MCP 2026-07-28): the call keeps the
task's id, so polling goes on from any console process and after a restart. A call keeps the latest log
messages its server sent while its requests were out.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-03
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("call", schema=None) as batch_op:
        batch_op.add_column(sa.Column("task_id", sa.String(length=256), nullable=True))
        batch_op.add_column(sa.Column("logs_json", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("call", schema=None) as batch_op:
        batch_op.drop_column("logs_json")
        batch_op.drop_column("task_id")
