"""Revoke the API tokens of people no longer in the token's team.

Such tokens were refused only while the person stayed out; adding them back to the team revived them.
Leaving a team now revokes them for good, and this revokes those left over from before.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01
"""

from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

token = sa.table(
    "identity_api_token",
    sa.column("user_id", sa.String),
    sa.column("team_id", sa.String),
    sa.column("revoked_at", sa.DateTime(timezone=True)),
)
membership = sa.table("identity_membership", sa.column("user_id", sa.String), sa.column("team_id", sa.String))


def upgrade() -> None:
    still_member = (
        sa.select(sa.literal(1))
        .select_from(membership)
        .where(membership.c.user_id == token.c.user_id, membership.c.team_id == token.c.team_id)
    )
    op.execute(
        token.update()
        .where(token.c.revoked_at.is_(None), ~sa.exists(still_member))
        .values(revoked_at=datetime.now(UTC))
    )


def downgrade() -> None:
    pass  # a revoked token stays revoked
