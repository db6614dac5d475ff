"""Runs the MCP gateway opens for agents: one per agent connection, token and day, or agent-chosen name.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("run", schema=None) as batch_op:
        batch_op.add_column(sa.Column("gateway_key", sa.String(length=300), nullable=True))
        batch_op.create_unique_constraint(batch_op.f("uq_run_team_id"), ["team_id", "gateway_key"])


def downgrade() -> None:
    with op.batch_alter_table("run", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("uq_run_team_id"), type_="unique")
        batch_op.drop_column("gateway_key")
