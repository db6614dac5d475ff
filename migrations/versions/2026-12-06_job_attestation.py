"""The approval attestation an outbox row's first send carried, which every later send of it carries again.

Revision ID: 0028
Revises: 0027
Create Date: 2026-12-06
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0028"
down_revision: str | None = "0027"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("dispatch_job", sa.Column("attestation", sa.Text(), nullable=True))


def downgrade() -> None:
    op.drop_column("dispatch_job", "attestation")
