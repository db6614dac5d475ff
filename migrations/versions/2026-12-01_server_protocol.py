"""The protocol version each MCP server negotiated when the console last connected to it.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("mcp_server", schema=None) as batch_op:
        batch_op.add_column(sa.Column("protocol_version", sa.String(length=20), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("mcp_server", schema=None) as batch_op:
        batch_op.drop_column("protocol_version")
