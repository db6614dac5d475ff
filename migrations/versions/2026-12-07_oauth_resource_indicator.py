"""How a server's authorization server takes the RFC 8707 `resource` parameter: sent, omitted (Microsoft
Entra ID refuses it), or by the console's rule (NULL); and the Application ID URI that qualifies the
scopes asked for when it is omitted.

Revision ID: 0031
Revises: 0030
Create Date: 2026-12-07
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0031"
down_revision: str | None = "0030"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("mcp_server", schema=None) as batch_op:
        batch_op.add_column(sa.Column("oauth_resource_indicator", sa.String(length=10), nullable=True))
        batch_op.add_column(sa.Column("oauth_scope_prefix", sa.String(length=500), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("mcp_server", schema=None) as batch_op:
        batch_op.drop_column("oauth_scope_prefix")
        batch_op.drop_column("oauth_resource_indicator")
