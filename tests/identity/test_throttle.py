"""Slowing password guessing: growing waits per account and client, never a lock on the owner, step-up
counted per session, and attempts sent at once checked at most one at a time. Time is passed in."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import anyio
import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from console.db import create_engine, session_factory
from console.errors import Unauthorized
from console.identity import create_team, create_user
from console.identity.sessions import (
    SessionPolicy,
    SignedIn,
    begin_reauthentication,
    begin_sign_in,
    reauthenticate,
    sign_in,
)
from console.identity.throttle import TooManyAttempts, client_key
from console.transactions import transaction

pytestmark = pytest.mark.anyio

PASSWORD = "lead-pw-1"  # noqa: S105  # a test account's password
WRONG = "guess"
POLICY = SessionPolicy()
T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
ATTACKER, OWNER = "203.0.113.66", "198.51.100.7"


@dataclass
class Site:
    factory: async_sessionmaker[AsyncSession]

    async def attempt(
        self, password: str, *, at: datetime, client: str = ATTACKER, name: str = "lead"
    ) -> str:
        """ "ok", "wrong", or the Retry-After seconds of a refusal."""
        try:
            await signed_in(self.factory, name, password, client=client, at=at)
        except Unauthorized:
            return "wrong"
        except TooManyAttempts as exc:
            return f"wait {exc.retry_after}"
        return "ok"


async def signed_in(
    factory: async_sessionmaker[AsyncSession], name: str, password: str, *, client: str, at: datetime
) -> SignedIn:
    """A sign-in as the login page runs it: the attempt recorded in a unit of its own, then checked."""
    async with transaction(factory) as session:
        attempt = await begin_sign_in(session=session, name=name, client=client, policy=POLICY, now=at)
    async with transaction(factory) as session:
        return await sign_in(
            session=session, attempt=attempt, name=name, password=password, client=client, policy=POLICY
        )


@pytest.fixture
async def site(database_url: str) -> AsyncIterator[Site]:
    engine = create_engine(database_url)
    try:
        factory = session_factory(engine)
        async with transaction(factory) as session:
            await create_team(session=session, name="platform")
            await create_user(
                session=session, name="lead", team_name="platform", role="approver", password=PASSWORD
            )
        yield Site(factory)
    finally:
        await engine.dispose()


def seconds(n: float) -> datetime:
    return T0 + timedelta(seconds=n)


async def test_after_three_failures_each_attempt_waits_twice_as_long_and_a_success_clears_them(
    site: Site,
) -> None:
    assert [await site.attempt(WRONG, at=T0) for _ in range(3)] == ["wrong"] * 3
    assert await site.attempt(PASSWORD, at=seconds(1)) == "wait 1"  # even the right password waits
    assert await site.attempt(WRONG, at=seconds(2)) == "wrong"
    assert await site.attempt(WRONG, at=seconds(5)) == "wait 1"  # 4 s after the 4th failure
    assert await site.attempt(WRONG, at=seconds(6)) == "wrong"
    assert await site.attempt(WRONG, at=seconds(6)) == "wait 8"
    assert await site.attempt(PASSWORD, at=seconds(14)) == "ok"
    # The success forgot the failures: the next mistake costs nothing again.
    assert await site.attempt(WRONG, at=seconds(14)) == "wrong"
    assert await site.attempt(WRONG, at=seconds(14)) == "wrong"


async def test_the_wait_is_capped_at_five_minutes_and_failures_are_forgotten_after_a_day(site: Site) -> None:
    at = T0
    for _ in range(12):
        outcome = await site.attempt(WRONG, at=at)
        if outcome.startswith("wait"):
            at += timedelta(seconds=int(outcome.split()[1]))
            outcome = await site.attempt(WRONG, at=at)
        assert outcome == "wrong"
    assert await site.attempt(WRONG, at=at) == "wait 300"
    assert await site.attempt(WRONG, at=at + timedelta(seconds=299)) == "wait 1"
    assert await site.attempt(PASSWORD, at=at + timedelta(hours=24, seconds=1)) == "ok"


async def test_failures_from_one_client_never_stop_the_owner_signing_in_from_another(site: Site) -> None:
    at = T0
    for _ in range(8):
        outcome = await site.attempt(WRONG, at=at)
        if outcome.startswith("wait"):
            at += timedelta(seconds=int(outcome.split()[1]))
            outcome = await site.attempt(WRONG, at=at)
        assert outcome == "wrong"
    assert (await site.attempt(PASSWORD, at=at)).startswith("wait")
    assert await site.attempt(PASSWORD, at=at, client=OWNER) == "ok"
    assert await site.attempt(WRONG, at=at, client=OWNER) == "wrong"  # and the owner's own count is theirs


async def test_one_client_trying_many_accounts_waits_after_twenty_failures(site: Site) -> None:
    for n in range(20):
        assert await site.attempt(WRONG, at=T0, name=f"ghost{n}") == "wrong"
    assert await site.attempt(PASSWORD, at=T0) == "wait 2"
    assert await site.attempt(PASSWORD, at=T0, client=OWNER) == "ok"
    # Those failures are forgotten after 15 minutes.
    assert await site.attempt(PASSWORD, at=T0 + timedelta(minutes=15, seconds=1)) == "ok"


async def test_ipv6_clients_are_counted_per_64_so_rotating_addresses_does_not_help(site: Site) -> None:
    assert client_key("2001:db8:1:2:aaaa::1") == client_key("2001:db8:1:2:bbbb::9") == "2001:db8:1:2::/64"
    assert client_key("::ffff:203.0.113.66") == ATTACKER
    for n in range(3):
        assert await site.attempt(WRONG, at=T0, client=f"2001:db8:1:2::{n + 1}") == "wrong"
    assert await site.attempt(PASSWORD, at=T0, client="2001:db8:1:2::99") == "wait 2"
    assert await site.attempt(PASSWORD, at=T0, client="2001:db8:1:3::1") == "ok"


async def test_attempts_sent_at_once_are_checked_at_most_one_at_a_time(site: Site) -> None:
    assert [await site.attempt(WRONG, at=T0) for _ in range(3)] == ["wrong"] * 3
    outcomes: list[str] = []

    async def guess() -> None:
        outcomes.append(await site.attempt(WRONG, at=seconds(2)))

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            for _ in range(6):
                tg.start_soon(guess)
    assert len(outcomes) == 6
    assert outcomes.count("wrong") <= 1
    assert all(o == "wrong" or o.startswith("wait") for o in outcomes)


async def test_step_up_counts_only_its_own_sessions_failures(site: Site) -> None:
    mine = await signed_in(site.factory, "lead", PASSWORD, client=OWNER, at=T0)
    other = await signed_in(site.factory, "lead", PASSWORD, client=OWNER, at=T0)

    async def confirm(signed_in_as: str | None, password: str, at: datetime) -> str:
        assert signed_in_as is not None
        try:
            async with transaction(site.factory) as session:
                attempt = await begin_reauthentication(
                    session=session, web_session_id=signed_in_as, policy=POLICY, now=at
                )
            async with transaction(site.factory) as session:
                await reauthenticate(
                    session=session,
                    attempt=attempt,
                    web_session_id=signed_in_as,
                    password=password,
                    client=OWNER,
                    policy=POLICY,
                )
        except Unauthorized:
            return "wrong"
        except TooManyAttempts as exc:
            return f"wait {exc.retry_after}"
        return "ok"

    # Someone guessing at the account from elsewhere does not block the signed-in person's step-up.
    at = T0
    for _ in range(10):
        outcome = await site.attempt(WRONG, at=at)
        if outcome.startswith("wait"):
            at += timedelta(seconds=int(outcome.split()[1]))
    assert await confirm(mine.viewer.web_session_id, PASSWORD, at) == "ok"

    # A session's own wrong passwords slow that session, not the person's other session or sign-in.
    assert [await confirm(mine.viewer.web_session_id, WRONG, at) for _ in range(3)] == ["wrong"] * 3
    assert await confirm(mine.viewer.web_session_id, PASSWORD, at) == "wait 2"
    assert await confirm(other.viewer.web_session_id, PASSWORD, at) == "ok"
    assert await site.attempt(PASSWORD, at=at, client=OWNER) == "ok"
    assert await confirm(mine.viewer.web_session_id, PASSWORD, at + timedelta(seconds=2)) == "ok"
