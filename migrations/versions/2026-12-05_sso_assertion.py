"""The ID token of a person's latest single sign-on, sealed: the assertion enterprise-managed
authorization exchanges.

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-05
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0023"
down_revision: str | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "identity_sso_assertion",
        sa.Column("user_id", sa.String(length=32), nullable=False),
        sa.Column("issuer", sa.String(length=500), nullable=False),
        sa.Column("sealed", sa.Text(), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("saved_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"], ["identity_user.id"], name=op.f("fk_identity_sso_assertion_user_id_identity_user")
        ),
        sa.PrimaryKeyConstraint("user_id", name=op.f("pk_identity_sso_assertion")),
    )


def downgrade() -> None:
    op.drop_table("identity_sso_assertion")
