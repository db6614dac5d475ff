"""Audit events waiting to be chained, and how far the audit page has verified the chain.

`audit_pending` holds events recorded while another transaction held the chain's head; whoever takes
the head next chains them and deletes them, so its rows are never updated (a trigger refuses it).
`audit_verified` is one row: the chain was verified up to its `seq` (0: not yet).

Revision ID: 0027
Revises: 0026
Create Date: 2026-12-05
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0027"
down_revision: str | None = "0026"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SEQ = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
GENESIS = "0" * 64
MESSAGE = "audit_pending rows are never updated"


def upgrade() -> None:
    op.create_table(
        "audit_pending",
        sa.Column("id", SEQ, autoincrement=True, nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("actor_type", sa.String(length=10), nullable=False),
        sa.Column("actor_id", sa.String(length=32), nullable=True),
        sa.Column("action", sa.String(length=50), nullable=False),
        sa.Column("subject_type", sa.String(length=20), nullable=False),
        sa.Column("subject_id", sa.String(length=32), nullable=False),
        sa.Column("call_id", sa.String(length=32), nullable=True),
        sa.Column("payload_json", sa.Text(), nullable=False),
        sa.Column("team_id", sa.String(length=32), nullable=True),
        sa.Column("server", sa.String(length=100), nullable=True),
        sa.Column("tool", sa.Text(), nullable=True),
        sa.Column("outcome", sa.String(length=20), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_pending")),
    )
    if op.get_bind().dialect.name == "sqlite":
        op.execute(
            "CREATE TRIGGER audit_pending_no_update BEFORE UPDATE ON audit_pending "
            f"BEGIN SELECT RAISE(ABORT, '{MESSAGE}'); END"
        )
    else:
        op.execute(
            "CREATE FUNCTION audit_pending_no_update() RETURNS trigger LANGUAGE plpgsql AS "
            f"$$ BEGIN RAISE EXCEPTION '{MESSAGE}'; END $$"
        )
        op.execute(
            "CREATE TRIGGER audit_pending_no_update BEFORE UPDATE ON audit_pending "
            "FOR EACH ROW EXECUTE FUNCTION audit_pending_no_update()"
        )
    verified = op.create_table(
        "audit_verified",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("seq", SEQ, nullable=False),
        sa.Column("hash", sa.String(length=64), nullable=False),
        sa.Column("checkpoint_seq", SEQ, nullable=False),
        sa.Column("checkpoint_signature", sa.String(length=100), nullable=False),
        sa.Column("verified_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_verified")),
    )
    op.bulk_insert(
        verified, [{"id": 1, "seq": 0, "hash": GENESIS, "checkpoint_seq": 0, "checkpoint_signature": ""}]
    )


def downgrade() -> None:
    op.drop_table("audit_verified")
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TRIGGER IF EXISTS audit_pending_no_update")
    else:
        op.execute("DROP TRIGGER IF EXISTS audit_pending_no_update ON audit_pending")
        op.execute("DROP FUNCTION IF EXISTS audit_pending_no_update()")
    op.drop_table("audit_pending")
