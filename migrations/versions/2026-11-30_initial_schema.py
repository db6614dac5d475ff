"""Initial schema: every table, plus triggers that keep audit_event append-only.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "audit_event",
        sa.Column(
            "seq", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False
        ),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("actor_type", sa.String(length=10), nullable=False),
        sa.Column("actor_id", sa.String(length=32), nullable=True),
        sa.Column("action", sa.String(length=50), nullable=False),
        sa.Column("subject_type", sa.String(length=20), nullable=False),
        sa.Column("subject_id", sa.String(length=32), nullable=False),
        sa.Column("call_id", sa.String(length=32), nullable=True),
        sa.Column("payload_json", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_audit_event")),
    )
    with op.batch_alter_table("audit_event", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_audit_event_action"), ["action"], unique=False)
        batch_op.create_index(batch_op.f("ix_audit_event_call_id"), ["call_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_audit_event_subject_id"), ["subject_id"], unique=False)

    op.create_table(
        "identity_team",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_identity_team")),
        sa.UniqueConstraint("name", name=op.f("uq_identity_team_name")),
    )
    op.create_table(
        "identity_user",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("password_hash", sa.String(length=300), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_identity_user")),
        sa.UniqueConstraint("name", name=op.f("uq_identity_user_name")),
    )
    op.create_table(
        "identity_api_token",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("user_id", sa.String(length=32), nullable=False),
        sa.Column("team_id", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["team_id"], ["identity_team.id"], name=op.f("fk_identity_api_token_team_id_identity_team")
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["identity_user.id"], name=op.f("fk_identity_api_token_user_id_identity_user")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_identity_api_token")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_identity_api_token_token_hash")),
    )
    with op.batch_alter_table("identity_api_token", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_identity_api_token_user_id"), ["user_id"], unique=False)

    op.create_table(
        "identity_membership",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("user_id", sa.String(length=32), nullable=False),
        sa.Column("team_id", sa.String(length=32), nullable=False),
        sa.Column("role", sa.String(length=20), nullable=False),
        sa.ForeignKeyConstraint(
            ["team_id"], ["identity_team.id"], name=op.f("fk_identity_membership_team_id_identity_team")
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["identity_user.id"], name=op.f("fk_identity_membership_user_id_identity_user")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_identity_membership")),
        sa.UniqueConstraint("user_id", "team_id", name=op.f("uq_identity_membership_user_id")),
    )
    with op.batch_alter_table("identity_membership", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_identity_membership_team_id"), ["team_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_identity_membership_user_id"), ["user_id"], unique=False)

    op.create_table(
        "mcp_server",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("team_id", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("transport", sa.String(length=10), nullable=False),
        sa.Column("command_json", sa.Text(), nullable=True),
        sa.Column("env_json", sa.Text(), nullable=False),
        sa.Column("url", sa.Text(), nullable=True),
        sa.Column("headers_json", sa.Text(), nullable=False),
        sa.Column("trusted", sa.Boolean(), nullable=False),
        sa.Column("idempotent", sa.Boolean(), nullable=False),
        sa.Column("disabled", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["team_id"], ["identity_team.id"], name=op.f("fk_mcp_server_team_id_identity_team")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_mcp_server")),
        sa.UniqueConstraint("team_id", "name", name=op.f("uq_mcp_server_team_id")),
    )
    with op.batch_alter_table("mcp_server", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_mcp_server_team_id"), ["team_id"], unique=False)

    op.create_table(
        "run",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("team_id", sa.String(length=32), nullable=False),
        sa.Column("owner_id", sa.String(length=32), nullable=False),
        sa.Column("agent", sa.String(length=200), nullable=False),
        sa.Column("title", sa.String(length=500), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["owner_id"], ["identity_user.id"], name=op.f("fk_run_owner_id_identity_user")
        ),
        sa.ForeignKeyConstraint(["team_id"], ["identity_team.id"], name=op.f("fk_run_team_id_identity_team")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_run")),
    )
    with op.batch_alter_table("run", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_run_owner_id"), ["owner_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_run_team_id"), ["team_id"], unique=False)

    op.create_table(
        "call",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("run_id", sa.String(length=32), nullable=False),
        sa.Column("server_id", sa.String(length=32), nullable=False),
        sa.Column("method", sa.String(length=30), nullable=False),
        sa.Column("params_json", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("round", sa.Integer(), nullable=False),
        sa.Column("restarts", sa.Integer(), nullable=False),
        sa.Column("result_json", sa.Text(), nullable=True),
        sa.Column("error_json", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["run.id"], name=op.f("fk_call_run_id_run")),
        sa.ForeignKeyConstraint(["server_id"], ["mcp_server.id"], name=op.f("fk_call_server_id_mcp_server")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_call")),
    )
    with op.batch_alter_table("call", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_call_run_id"), ["run_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_call_status"), ["status"], unique=False)

    op.create_table(
        "call_round",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("call_id", sa.String(length=32), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("input_requests_json", sa.Text(), nullable=False),
        sa.Column("request_state_json", sa.Text(), nullable=True),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("error_json", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["call_id"], ["call.id"], name=op.f("fk_call_round_call_id_call")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_call_round")),
        sa.UniqueConstraint("call_id", "n", name=op.f("uq_call_round_call_id")),
    )
    with op.batch_alter_table("call_round", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_call_round_call_id"), ["call_id"], unique=False)

    op.create_table(
        "dispatch_job",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("call_id", sa.String(length=32), nullable=False),
        sa.Column("round_id", sa.String(length=32), nullable=True),
        sa.Column("kind", sa.String(length=10), nullable=False),
        sa.Column("restart_of", sa.String(length=32), nullable=True),
        sa.Column("status", sa.String(length=12), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("not_before", sa.DateTime(timezone=True), nullable=False),
        sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("claimed_by", sa.String(length=64), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["call_id"], ["call.id"], name=op.f("fk_dispatch_job_call_id_call")),
        sa.ForeignKeyConstraint(
            ["round_id"], ["call_round.id"], name=op.f("fk_dispatch_job_round_id_call_round")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_dispatch_job")),
        sa.UniqueConstraint("round_id", name=op.f("uq_dispatch_job_round_id")),
    )
    with op.batch_alter_table("dispatch_job", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_dispatch_job_call_id"), ["call_id"], unique=False)
        batch_op.create_index("ix_dispatch_job_due", ["status", "not_before"], unique=False)

    op.create_table(
        "elicitation",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("round_id", sa.String(length=32), nullable=False),
        sa.Column("call_id", sa.String(length=32), nullable=False),
        sa.Column("team_id", sa.String(length=32), nullable=False),
        sa.Column("owner_id", sa.String(length=32), nullable=False),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("mode", sa.String(length=10), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("schema_json", sa.Text(), nullable=True),
        sa.Column("url", sa.Text(), nullable=True),
        sa.Column("request_digest", sa.String(length=64), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("content_json", sa.Text(), nullable=True),
        sa.Column("decided_by", sa.String(length=32), nullable=True),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("reapplied_from", sa.String(length=32), nullable=True),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["call_id"], ["call.id"], name=op.f("fk_elicitation_call_id_call")),
        sa.ForeignKeyConstraint(
            ["decided_by"], ["identity_user.id"], name=op.f("fk_elicitation_decided_by_identity_user")
        ),
        sa.ForeignKeyConstraint(
            ["owner_id"], ["identity_user.id"], name=op.f("fk_elicitation_owner_id_identity_user")
        ),
        sa.ForeignKeyConstraint(
            ["round_id"], ["call_round.id"], name=op.f("fk_elicitation_round_id_call_round")
        ),
        sa.ForeignKeyConstraint(
            ["team_id"], ["identity_team.id"], name=op.f("fk_elicitation_team_id_identity_team")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_elicitation")),
    )
    with op.batch_alter_table("elicitation", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_elicitation_call_id"), ["call_id"], unique=False)
        batch_op.create_index("ix_elicitation_inbox", ["status", "team_id", "created_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_elicitation_owner_id"), ["owner_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_elicitation_round_id"), ["round_id"], unique=False)
    _make_audit_append_only()


APPEND_ONLY = "audit_event is append-only"


def _make_audit_append_only() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for verb in ("UPDATE", "DELETE"):
            op.execute(
                f"CREATE TRIGGER audit_event_no_{verb.lower()} BEFORE {verb} ON audit_event "
                f"BEGIN SELECT RAISE(ABORT, '{APPEND_ONLY}'); END"
            )
        return
    op.execute(
        "CREATE FUNCTION audit_event_append_only() RETURNS trigger LANGUAGE plpgsql AS "
        f"$$ BEGIN RAISE EXCEPTION '{APPEND_ONLY}'; END $$"
    )
    op.execute(
        "CREATE TRIGGER audit_event_append_only BEFORE UPDATE OR DELETE ON audit_event "
        "FOR EACH ROW EXECUTE FUNCTION audit_event_append_only()"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TRIGGER IF EXISTS audit_event_no_update")
        op.execute("DROP TRIGGER IF EXISTS audit_event_no_delete")
    else:
        op.execute("DROP TRIGGER IF EXISTS audit_event_append_only ON audit_event")
        op.execute("DROP FUNCTION IF EXISTS audit_event_append_only()")
    with op.batch_alter_table("elicitation", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_elicitation_round_id"))
        batch_op.drop_index(batch_op.f("ix_elicitation_owner_id"))
        batch_op.drop_index("ix_elicitation_inbox")
        batch_op.drop_index(batch_op.f("ix_elicitation_call_id"))

    op.drop_table("elicitation")
    with op.batch_alter_table("dispatch_job", schema=None) as batch_op:
        batch_op.drop_index("ix_dispatch_job_due")
        batch_op.drop_index(batch_op.f("ix_dispatch_job_call_id"))

    op.drop_table("dispatch_job")
    with op.batch_alter_table("call_round", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_call_round_call_id"))

    op.drop_table("call_round")
    with op.batch_alter_table("call", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_call_status"))
        batch_op.drop_index(batch_op.f("ix_call_run_id"))

    op.drop_table("call")
    with op.batch_alter_table("run", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_run_team_id"))
        batch_op.drop_index(batch_op.f("ix_run_owner_id"))

    op.drop_table("run")
    with op.batch_alter_table("mcp_server", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_mcp_server_team_id"))

    op.drop_table("mcp_server")
    with op.batch_alter_table("identity_membership", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_identity_membership_user_id"))
        batch_op.drop_index(batch_op.f("ix_identity_membership_team_id"))

    op.drop_table("identity_membership")
    with op.batch_alter_table("identity_api_token", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_identity_api_token_user_id"))

    op.drop_table("identity_api_token")
    op.drop_table("identity_user")
    op.drop_table("identity_team")
    with op.batch_alter_table("audit_event", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_audit_event_subject_id"))
        batch_op.drop_index(batch_op.f("ix_audit_event_call_id"))
        batch_op.drop_index(batch_op.f("ix_audit_event_action"))

    op.drop_table("audit_event")
