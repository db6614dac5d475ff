"""Approval gates: a policy rule may gate the calls it covers (they wait for approval before anything is
sent), let approvers edit the arguments, and apply only to calls whose arguments meet a condition; a
gate question keeps whether its approvers may edit, and a call the params its approvers changed.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("policy_rule", schema=None) as batch_op:
        batch_op.add_column(sa.Column("gate", sa.Boolean(), nullable=True))
        batch_op.add_column(sa.Column("allow_edit", sa.Boolean(), nullable=True))
        batch_op.add_column(sa.Column("condition", sa.Text(), nullable=True))
    with op.batch_alter_table("elicitation", schema=None) as batch_op:
        batch_op.add_column(sa.Column("allow_edit", sa.Boolean(), nullable=False, server_default=sa.false()))
    with op.batch_alter_table("call", schema=None) as batch_op:
        batch_op.add_column(sa.Column("approved_params_json", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("call", schema=None) as batch_op:
        batch_op.drop_column("approved_params_json")
    with op.batch_alter_table("elicitation", schema=None) as batch_op:
        batch_op.drop_column("allow_edit")
    with op.batch_alter_table("policy_rule", schema=None) as batch_op:
        batch_op.drop_column("condition")
        batch_op.drop_column("allow_edit")
        batch_op.drop_column("gate")
