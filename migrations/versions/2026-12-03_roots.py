"""Roots: each MCP server's own and each team's default.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-03
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("mcp_server", schema=None) as batch_op:
        batch_op.add_column(sa.Column("roots_json", sa.Text(), nullable=True))
    with op.batch_alter_table("identity_team", schema=None) as batch_op:
        batch_op.add_column(sa.Column("default_roots_json", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("identity_team", schema=None) as batch_op:
        batch_op.drop_column("default_roots_json")
    with op.batch_alter_table("mcp_server", schema=None) as batch_op:
        batch_op.drop_column("roots_json")
