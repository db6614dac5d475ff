"""Servers a site admin marks internal may use loopback, link-local and private addresses.

Existing servers start as not internal: one on a private network must be marked again
(`console servers edit TEAM NAME --internal`, or the admin page as a site admin). Header and
environment values stored in plain text by earlier versions are sealed by the console itself on its
first start (or `console migrate`) with CONSOLE_SECRET_KEY set: a migration has no key.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("mcp_server", schema=None) as batch_op:
        batch_op.add_column(sa.Column("internal", sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table("mcp_server", schema=None) as batch_op:
        batch_op.drop_column("internal")
