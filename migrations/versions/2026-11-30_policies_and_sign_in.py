"""Approval policies, co-signatures, OpenID Connect sign-in and site administrators.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("identity_user", schema=None) as batch_op:
        batch_op.add_column(sa.Column("site_admin", sa.Boolean(), nullable=False, server_default=sa.false()))
        batch_op.add_column(sa.Column("oidc_issuer", sa.String(length=500), nullable=True))
        batch_op.add_column(sa.Column("oidc_subject", sa.String(length=255), nullable=True))
        batch_op.create_unique_constraint(
            batch_op.f("uq_identity_user_oidc_issuer"), ["oidc_issuer", "oidc_subject"]
        )

    with op.batch_alter_table("identity_web_session", schema=None) as batch_op:
        batch_op.add_column(sa.Column("authenticated_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(
            sa.Column("auth_method", sa.String(length=20), nullable=False, server_default="password")
        )
    op.execute("UPDATE identity_web_session SET authenticated_at = created_at")
    with op.batch_alter_table("identity_web_session", schema=None) as batch_op:
        batch_op.alter_column("authenticated_at", nullable=False)

    op.create_table(
        "identity_oidc_login",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("nonce", sa.String(length=100), nullable=False),
        sa.Column("code_verifier", sa.String(length=200), nullable=False),
        sa.Column("next_path", sa.Text(), nullable=False),
        sa.Column("web_session_id", sa.String(length=64), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_identity_oidc_login")),
    )

    op.create_table(
        "policy_rule",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("team_id", sa.String(length=32), nullable=False),
        sa.Column("scope", sa.String(length=12), nullable=False),
        sa.Column("server_id", sa.String(length=32), nullable=True),
        sa.Column("tool_pattern", sa.String(length=200), nullable=True),
        sa.Column("scope_key", sa.String(length=300), nullable=False),
        sa.Column("answerers", sa.String(length=20), nullable=True),
        sa.Column("no_self_approval", sa.Boolean(), nullable=True),
        sa.Column("required_approvals", sa.Integer(), nullable=True),
        sa.Column("expiry_minutes", sa.Integer(), nullable=True),
        sa.Column("expiry_action", sa.String(length=10), nullable=True),
        sa.Column("step_up_minutes", sa.Integer(), nullable=True),
        sa.Column("updated_by", sa.String(length=32), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["team_id"], ["identity_team.id"], name=op.f("fk_policy_rule_team_id_identity_team")
        ),
        sa.ForeignKeyConstraint(
            ["server_id"], ["mcp_server.id"], name=op.f("fk_policy_rule_server_id_mcp_server")
        ),
        sa.ForeignKeyConstraint(
            ["updated_by"], ["identity_user.id"], name=op.f("fk_policy_rule_updated_by_identity_user")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_policy_rule")),
        sa.UniqueConstraint("team_id", "scope_key", name=op.f("uq_policy_rule_team_id")),
    )

    with op.batch_alter_table("elicitation", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("answerers", sa.String(length=20), nullable=False, server_default="owner_or_approvers")
        )
        batch_op.add_column(
            sa.Column("no_self_approval", sa.Boolean(), nullable=False, server_default=sa.false())
        )
        batch_op.add_column(sa.Column("required_approvals", sa.Integer(), nullable=False, server_default="1"))
        batch_op.add_column(sa.Column("step_up_minutes", sa.Integer(), nullable=True))
        batch_op.add_column(
            sa.Column("expiry_action", sa.String(length=10), nullable=False, server_default="cancel")
        )
        batch_op.add_column(sa.Column("policy_json", sa.Text(), nullable=False, server_default="[]"))
        batch_op.add_column(sa.Column("content_digest", sa.String(length=64), nullable=True))

    op.create_table(
        "elicitation_signature",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("elicitation_id", sa.String(length=32), nullable=False),
        sa.Column("user_id", sa.String(length=32), nullable=False),
        sa.Column("action", sa.String(length=10), nullable=False),
        sa.Column("content_digest", sa.String(length=64), nullable=True),
        sa.Column("via", sa.String(length=60), nullable=True),
        sa.Column("signed_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["elicitation_id"],
            ["elicitation.id"],
            name=op.f("fk_elicitation_signature_elicitation_id_elicitation"),
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["identity_user.id"], name=op.f("fk_elicitation_signature_user_id_identity_user")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_elicitation_signature")),
        sa.UniqueConstraint(
            "elicitation_id", "user_id", name=op.f("uq_elicitation_signature_elicitation_id")
        ),
    )
    with op.batch_alter_table("elicitation_signature", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_elicitation_signature_elicitation_id"), ["elicitation_id"], unique=False
        )

    with op.batch_alter_table("call", schema=None) as batch_op:
        batch_op.add_column(sa.Column("tool_annotations_json", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("call", schema=None) as batch_op:
        batch_op.drop_column("tool_annotations_json")
    with op.batch_alter_table("elicitation_signature", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_elicitation_signature_elicitation_id"))
    op.drop_table("elicitation_signature")
    with op.batch_alter_table("elicitation", schema=None) as batch_op:
        for column in (
            "content_digest",
            "policy_json",
            "expiry_action",
            "step_up_minutes",
            "required_approvals",
            "no_self_approval",
            "answerers",
        ):
            batch_op.drop_column(column)
    op.drop_table("policy_rule")
    op.drop_table("identity_oidc_login")
    with op.batch_alter_table("identity_web_session", schema=None) as batch_op:
        batch_op.drop_column("auth_method")
        batch_op.drop_column("authenticated_at")
    with op.batch_alter_table("identity_user", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("uq_identity_user_oidc_issuer"), type_="unique")
        batch_op.drop_column("oidc_subject")
        batch_op.drop_column("oidc_issuer")
        batch_op.drop_column("site_admin")
