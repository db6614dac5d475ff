"""A form's content kept on the web session while its owner re-authenticates for a step-up.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("identity_web_session", schema=None) as batch_op:
        batch_op.add_column(sa.Column("kept_form_for", sa.String(length=100), nullable=True))
        batch_op.add_column(sa.Column("kept_form_json", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("kept_form_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("identity_web_session", schema=None) as batch_op:
        batch_op.drop_column("kept_form_at")
        batch_op.drop_column("kept_form_json")
        batch_op.drop_column("kept_form_for")
