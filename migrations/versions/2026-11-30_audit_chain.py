"""Hash chain and signed checkpoints for the audit log.

Events already in `audit_event` keep NULL hashes: the chain starts at the first event written after this
migration (its previous hash is 64 zeros), and `console audit verify` counts the older events as written
before the chain existed. `audit_checkpoint` is append-only like `audit_event`; `audit_head` is the one
row that writers lock and update.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SEQ = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
GENESIS = "0" * 64


def upgrade() -> None:
    # Plain ALTER TABLE ADD COLUMN: a batch rebuild on SQLite would drop the append-only triggers.
    op.add_column("audit_event", sa.Column("team_id", sa.String(length=32), nullable=True))
    op.add_column("audit_event", sa.Column("server", sa.String(length=100), nullable=True))
    op.add_column("audit_event", sa.Column("tool", sa.Text(), nullable=True))
    op.add_column("audit_event", sa.Column("outcome", sa.String(length=20), nullable=True))
    op.add_column("audit_event", sa.Column("prev_hash", sa.String(length=64), nullable=True))
    op.add_column("audit_event", sa.Column("hash", sa.String(length=64), nullable=True))
    op.create_index(op.f("ix_audit_event_team_id"), "audit_event", ["team_id"], unique=False)
    head = op.create_table(
        "audit_head",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("seq", SEQ, nullable=False),
        sa.Column("hash", sa.String(length=64), nullable=False),
        sa.Column("checkpoint_seq", SEQ, nullable=False),
        sa.Column("checkpoint_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("checkpoint_signature", sa.String(length=100), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_head")),
    )
    op.create_table(
        "audit_checkpoint",
        sa.Column("seq", SEQ, autoincrement=False, nullable=False),
        sa.Column("hash", sa.String(length=64), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("prev_signature", sa.String(length=100), nullable=False),
        sa.Column("key_id", sa.String(length=16), nullable=False),
        sa.Column("signature", sa.String(length=100), nullable=False),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_audit_checkpoint")),
    )
    last = op.get_bind().execute(sa.text("SELECT COALESCE(MAX(seq), 0) FROM audit_event")).scalar_one()
    op.bulk_insert(
        head,
        [{"id": 1, "seq": last, "hash": GENESIS, "checkpoint_seq": last, "checkpoint_signature": ""}],
    )
    _make_append_only("audit_checkpoint")


def _make_append_only(table: str) -> None:
    message = f"{table} is append-only"
    if op.get_bind().dialect.name == "sqlite":
        for verb in ("UPDATE", "DELETE"):
            op.execute(
                f"CREATE TRIGGER {table}_no_{verb.lower()} BEFORE {verb} ON {table} "
                f"BEGIN SELECT RAISE(ABORT, '{message}'); END"
            )
        return
    op.execute(
        f"CREATE FUNCTION {table}_append_only() RETURNS trigger LANGUAGE plpgsql AS "
        f"$$ BEGIN RAISE EXCEPTION '{message}'; END $$"
    )
    op.execute(
        f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
        f"FOR EACH ROW EXECUTE FUNCTION {table}_append_only()"
    )


def downgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    if sqlite:
        for table in ("audit_checkpoint", "audit_event"):
            op.execute(f"DROP TRIGGER IF EXISTS {table}_no_update")
            op.execute(f"DROP TRIGGER IF EXISTS {table}_no_delete")
    else:
        op.execute("DROP TRIGGER IF EXISTS audit_checkpoint_append_only ON audit_checkpoint")
        op.execute("DROP FUNCTION IF EXISTS audit_checkpoint_append_only()")
    op.drop_table("audit_checkpoint")
    op.drop_table("audit_head")
    op.drop_index(op.f("ix_audit_event_team_id"), table_name="audit_event")
    with op.batch_alter_table("audit_event", schema=None) as batch_op:
        for column in ("hash", "prev_hash", "outcome", "tool", "server", "team_id"):
            batch_op.drop_column(column)
    if sqlite:  # the batch rebuild of audit_event dropped its triggers; put back those of 0001
        for verb in ("UPDATE", "DELETE"):
            op.execute(
                f"CREATE TRIGGER audit_event_no_{verb.lower()} BEFORE {verb} ON audit_event "
                "BEGIN SELECT RAISE(ABORT, 'audit_event is append-only'); END"
            )
