"""Where each question was decided: in a browser, through the API, or in the person's own agent.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("elicitation", schema=None) as batch_op:
        batch_op.add_column(sa.Column("decided_via", sa.String(length=80), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("elicitation", schema=None) as batch_op:
        batch_op.drop_column("decided_via")
