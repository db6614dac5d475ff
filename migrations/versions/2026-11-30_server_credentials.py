"""Per-user server credentials (sealed with AES-GCM) and how a server expects them.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "identity_server_credential",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("user_id", sa.String(length=32), nullable=False),
        sa.Column("server_id", sa.String(length=32), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("sealed", sa.Text(), nullable=False),
        sa.Column("details_json", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["server_id"], ["mcp_server.id"], name=op.f("fk_identity_server_credential_server_id_mcp_server")
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["identity_user.id"],
            name=op.f("fk_identity_server_credential_user_id_identity_user"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_identity_server_credential")),
        sa.UniqueConstraint("user_id", "server_id", name=op.f("uq_identity_server_credential_user_id")),
    )
    with op.batch_alter_table("identity_server_credential", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_identity_server_credential_user_id"), ["user_id"], unique=False)

    with op.batch_alter_table("mcp_server", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("credential_mode", sa.String(length=10), nullable=False, server_default="shared")
        )
        batch_op.add_column(sa.Column("credential_name", sa.String(length=100), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("mcp_server", schema=None) as batch_op:
        batch_op.drop_column("credential_name")
        batch_op.drop_column("credential_mode")

    with op.batch_alter_table("identity_server_credential", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_identity_server_credential_user_id"))

    op.drop_table("identity_server_credential")
