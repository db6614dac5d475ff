"""OAuth to MCP servers: clients registered at authorization servers, authorizations under way, and a
server's client entered by an admin.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-04
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("mcp_server", schema=None) as batch_op:
        batch_op.add_column(sa.Column("oauth_client_json", sa.Text(), nullable=True))
    op.create_table(
        "oauth_client",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("issuer", sa.String(length=500), nullable=False),
        sa.Column("redirect_uri", sa.String(length=500), nullable=False),
        sa.Column("client_id", sa.Text(), nullable=False),
        sa.Column("sealed_secret", sa.Text(), nullable=True),
        sa.Column("auth_method", sa.String(length=40), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_oauth_client")),
        sa.UniqueConstraint("issuer", "redirect_uri", name=op.f("uq_oauth_client_issuer")),
    )
    op.create_table(
        "oauth_attempt",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("user_id", sa.String(length=32), nullable=False),
        sa.Column("server_id", sa.String(length=32), nullable=False),
        sa.Column("browser_digest", sa.String(length=64), nullable=False),
        sa.Column("issuer", sa.String(length=500), nullable=False),
        sa.Column("plan", sa.Text(), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["server_id"], ["mcp_server.id"], name=op.f("fk_oauth_attempt_server_id_mcp_server")
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["identity_user.id"], name=op.f("fk_oauth_attempt_user_id_identity_user")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_oauth_attempt")),
    )
    op.create_index(op.f("ix_oauth_attempt_server_id"), "oauth_attempt", ["server_id"], unique=False)
    op.create_index(op.f("ix_oauth_attempt_user_id"), "oauth_attempt", ["user_id"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_oauth_attempt_user_id"), table_name="oauth_attempt")
    op.drop_index(op.f("ix_oauth_attempt_server_id"), table_name="oauth_attempt")
    op.drop_table("oauth_attempt")
    op.drop_table("oauth_client")
    with op.batch_alter_table("mcp_server", schema=None) as batch_op:
        batch_op.drop_column("oauth_client_json")
