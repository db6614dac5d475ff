"""A server may say how long it waits for the answer to a question it pushes (MCP 2025-11-25), when an
admin knows it: its held questions expire before it gives up.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-03
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("mcp_server", schema=None) as batch_op:
        batch_op.add_column(sa.Column("push_hold_seconds", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("mcp_server", schema=None) as batch_op:
        batch_op.drop_column("push_hold_seconds")
