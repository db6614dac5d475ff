"""Input requests a call's agent answers itself (sampling, roots), and which of them a call relays.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("call", schema=None) as batch_op:
        batch_op.add_column(sa.Column("relayed_json", sa.Text(), nullable=True))
    op.create_table(
        "agent_request",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("round_id", sa.String(length=32), nullable=False),
        sa.Column("call_id", sa.String(length=32), nullable=False),
        sa.Column("owner_id", sa.String(length=32), nullable=False),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("method", sa.String(length=40), nullable=False),
        sa.Column("params_json", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("response_json", sa.Text(), nullable=True),
        sa.Column("answered_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["call_id"], ["call.id"], name=op.f("fk_agent_request_call_id_call")),
        sa.ForeignKeyConstraint(
            ["owner_id"], ["identity_user.id"], name=op.f("fk_agent_request_owner_id_identity_user")
        ),
        sa.ForeignKeyConstraint(
            ["round_id"], ["call_round.id"], name=op.f("fk_agent_request_round_id_call_round")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_agent_request")),
        sa.UniqueConstraint("round_id", "key", name=op.f("uq_agent_request_round_id")),
    )
    op.create_index(op.f("ix_agent_request_call_id"), "agent_request", ["call_id"], unique=False)
    op.create_index(op.f("ix_agent_request_round_id"), "agent_request", ["round_id"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_agent_request_round_id"), table_name="agent_request")
    op.drop_index(op.f("ix_agent_request_call_id"), table_name="agent_request")
    op.drop_table("agent_request")
    with op.batch_alter_table("call", schema=None) as batch_op:
        batch_op.drop_column("relayed_json")
