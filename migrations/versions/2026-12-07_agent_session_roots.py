"""An agent's roots per 2025-11-25 gateway session (`mcp_agent_roots`), and the session on each call its
agent made there (`call.gateway_session`), so that any console process sends the call on a connection of
that session, told the agent's roots.

Revision ID: 0032
Revises: 0031
Create Date: 2026-12-07
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0032"
down_revision: str | None = "0031"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "mcp_agent_roots",
        sa.Column("session_id", sa.String(length=100), nullable=False),
        sa.Column("user_id", sa.String(length=32), nullable=False),
        sa.Column("roots_json", sa.Text(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("session_id", name=op.f("pk_mcp_agent_roots")),
    )
    with op.batch_alter_table("call", schema=None) as batch_op:
        batch_op.add_column(sa.Column("gateway_session", sa.String(length=100), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("call", schema=None) as batch_op:
        batch_op.drop_column("gateway_session")
    op.drop_table("mcp_agent_roots")
