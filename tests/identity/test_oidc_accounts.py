"""People from the provider: matched by issuer and subject, never merged into a local account by name,
and their memberships following the teams claim without touching memberships made by hand."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit.models import AuditEvent
from console.db import create_engine, session_factory
from console.errors import Unauthorized
from console.identity import authenticate_token, create_team, create_token, create_user
from console.identity.models import Membership, Team, User
from console.identity.oidc_accounts import (
    display_name,
    find_or_create_user,
    parse_teams_claim,
    sync_memberships,
)
from console.transactions import transaction

pytestmark = pytest.mark.anyio

ISSUER = "https://id.example.com"
PASSWORD = "alice-local-pw"  # noqa: S105  # a test account's password


@pytest.fixture
async def session(database_url: str) -> AsyncIterator[AsyncSession]:
    engine = create_engine(database_url)
    try:
        async with transaction(session_factory(engine)) as db:
            for team in ("platform", "ops", "data"):
                await create_team(session=db, name=team)
            await create_user(session=db, name="alice", team_name="ops", role="auditor", password=PASSWORD)
            yield db
    finally:
        await engine.dispose()


async def teams_of(db: AsyncSession, user: User) -> dict[str, tuple[str, str]]:
    rows = await db.execute(
        select(Team.name, Membership.role, Membership.source)
        .join(Team, Team.id == Membership.team_id)
        .where(Membership.user_id == user.id)
    )
    return {name: (role, source) for name, role, source in rows}


def test_the_teams_claim_reads_team_and_team_role_entries_and_ignores_the_rest() -> None:
    claim = ["platform:approver", "ops", "data:owner", "", 7, "platform:admin", "a:b:auditor"]
    assert parse_teams_claim(claim) == {"platform": "approver", "ops": "member", "a:b": "auditor"}
    assert parse_teams_claim("ops:admin") == {"ops": "admin"}
    assert parse_teams_claim(None) == {}
    assert parse_teams_claim({"ops": "admin"}) == {}


def test_the_display_name_prefers_preferred_username_then_email_then_subject() -> None:
    assert display_name({"sub": "s", "preferred_username": "ann", "email": "a@x"}) == "ann"
    assert display_name({"sub": "s", "preferred_username": " \u0000 ", "email": "a@x"}) == "a@x"
    assert display_name({"sub": "s", "preferred_username": 5}) == "s"
    assert display_name({"sub": "s", "preferred_username": "a\u202eb\tc"}) == "ab c"


async def test_a_provider_account_with_a_local_accounts_name_gets_its_own_user(session: AsyncSession) -> None:
    claims = {"sub": "sub-1", "preferred_username": "alice"}
    user = await find_or_create_user(session=session, issuer=ISSUER, claims=claims)
    await session.commit()
    local = (await session.execute(select(User).where(User.name == "alice"))).scalar_one()
    assert user.name == "alice-2"
    assert (local.oidc_issuer, local.oidc_subject, local.password_hash is not None) == (None, None, True)
    again = await find_or_create_user(
        session=session, issuer=ISSUER, claims={**claims, "preferred_username": "x"}
    )
    assert (again.id, again.name) == (user.id, "alice-2")
    other_issuer = await find_or_create_user(session=session, issuer="https://other.example", claims=claims)
    assert other_issuer.id != user.id


async def test_memberships_follow_the_claim_and_manual_ones_stay(session: AsyncSession) -> None:
    alice = (await session.execute(select(User).where(User.name == "alice"))).scalar_one()
    await sync_memberships(
        session=session, user=alice, wanted={"platform": "approver", "ops": "admin", "nowhere": "admin"}
    )
    await session.commit()
    assert await teams_of(session, alice) == {"platform": ("approver", "oidc"), "ops": ("auditor", "manual")}

    await sync_memberships(session=session, user=alice, wanted={"data": "member", "platform": "member"})
    await session.commit()
    assert await teams_of(session, alice) == {
        "platform": ("member", "oidc"),
        "data": ("member", "oidc"),
        "ops": ("auditor", "manual"),
    }

    await sync_memberships(session=session, user=alice, wanted={})
    await session.commit()
    assert await teams_of(session, alice) == {"ops": ("auditor", "manual")}


async def test_a_team_the_claim_no_longer_names_takes_the_users_tokens_for_it_for_good(
    session: AsyncSession,
) -> None:
    alice = (await session.execute(select(User).where(User.name == "alice"))).scalar_one()
    await sync_memberships(session=session, user=alice, wanted={"platform": "approver"})
    await session.commit()
    token = (await create_token(session=session, user_name="alice", team_name="platform")).token
    kept = (await create_token(session=session, user_name="alice", team_name="ops")).token
    assert (await authenticate_token(session=session, token=token)).role == "approver"

    await sync_memberships(session=session, user=alice, wanted={})
    await session.commit()
    with pytest.raises(Unauthorized):
        await authenticate_token(session=session, token=token)
    assert (await authenticate_token(session=session, token=kept)).team_name == "ops"
    event = (
        await session.execute(select(AuditEvent).where(AuditEvent.action == "token_revoked"))
    ).scalar_one()
    assert json.loads(event.payload_json)["reason"] == "membership ended"

    # The claim names the team again: the membership comes back, the old token does not.
    await sync_memberships(session=session, user=alice, wanted={"platform": "approver"})
    await session.commit()
    with pytest.raises(Unauthorized):
        await authenticate_token(session=session, token=token)
