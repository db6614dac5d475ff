"""An index on a call's server and creation time: the server settings page reads a server's recent calls
for the advice to pin its protocol, which without it scans every call.

Revision ID: 0033
Revises: 0032
Create Date: 2026-12-07
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0033"
down_revision: str | None = "0032"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_call_server_created", "call", ["server_id", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_call_server_created", table_name="call")
