"""Approval policies say whether people answer a server's sampling requests, and each call keeps what its
policy said when it started.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-03
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("policy_rule", schema=None) as batch_op:
        batch_op.add_column(sa.Column("sampling", sa.Boolean(), nullable=True))
    with op.batch_alter_table("call", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("people_sample", sa.Boolean(), server_default=sa.false(), nullable=False)
        )


def downgrade() -> None:
    with op.batch_alter_table("call", schema=None) as batch_op:
        batch_op.drop_column("people_sample")
    with op.batch_alter_table("policy_rule", schema=None) as batch_op:
        batch_op.drop_column("sampling")
