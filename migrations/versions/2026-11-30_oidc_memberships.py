"""Where a team membership came from: made by hand, or granted by the OpenID provider's teams claim.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("identity_membership", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("source", sa.String(length=20), nullable=False, server_default="manual")
        )


def downgrade() -> None:
    with op.batch_alter_table("identity_membership", schema=None) as batch_op:
        batch_op.drop_column("source")
