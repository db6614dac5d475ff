"""A round may be held: what an older server (MCP 2025-11-25) pushed while the console holds its request
open, answered on that request rather than by sending it again. A call keeps the latest progress its
server reported.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-03
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("call_round", schema=None) as batch_op:
        batch_op.add_column(sa.Column("held", sa.Boolean(), server_default=sa.false(), nullable=False))
    with op.batch_alter_table("call", schema=None) as batch_op:
        batch_op.add_column(sa.Column("progress_json", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("call", schema=None) as batch_op:
        batch_op.drop_column("progress_json")
    with op.batch_alter_table("call_round", schema=None) as batch_op:
        batch_op.drop_column("held")
