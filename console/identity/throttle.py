"""Slowing password guessing without locking anyone out: growing waits per key, never a lock for all.

A key names who is guessing: an account from one client, one client at any account, or one browser
session confirming its sign-in. A few failures under a key cost nothing; each further attempt under it
must wait twice as long after the last failure as the one before, up to a cap. Failures from one client
never slow the account's owner on another, and a signed-in person's step-up counts only its own session.

Every attempt is recorded in a unit of work of its own (`record_attempt`), committed before its password
is checked (`check_attempt` first), so it counts as a failure until a success forgets it. That makes
attempts sent at once under one key wait for each other, in one console process or several: once a wait
is due, at most one of them has its password checked.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from console.db import new_id
from console.errors import ConsoleError
from console.identity.models import LoginFailure
from console.transactions import keep_writes

KEY_LENGTH = 200


@dataclass(frozen=True)
class Limit:
    free: int  # failures that cost no wait
    memory: timedelta  # failures older than this are forgotten
    cap: timedelta = timedelta(minutes=5)

    def wait_after(self, failures: int) -> timedelta:
        """How long after the last of `failures` failures the next attempt must wait: 2, 4, 8 ... s."""
        if failures < self.free:
            return timedelta(0)
        return min(timedelta(seconds=2 ** min(failures - self.free + 1, 30)), self.cap)


ACCOUNT_FROM_CLIENT = Limit(free=3, memory=timedelta(hours=24))
CLIENT = Limit(free=20, memory=timedelta(minutes=15))  # one client trying many accounts
SESSION = Limit(free=3, memory=timedelta(hours=24))


class TooManyAttempts(ConsoleError):
    """Answered 429 with Retry-After: `retry_after` seconds."""

    code = "too_many_attempts"

    def __init__(self, retry_after: int) -> None:
        self.retry_after = retry_after
        super().__init__(f"Too many wrong passwords from here. Try again in {_duration(retry_after)}.")


@dataclass(frozen=True)
class Attempt:
    """One password attempt as recorded: a row per key, counted as failures until forgotten."""

    row_ids: tuple[str, ...]
    keys: tuple[str, ...]
    at: datetime


def client_key(address: str) -> str:
    """The client a failure is counted against: its IPv4 address, or its IPv6 /64 (one host's share)."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address[:100]
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)


def account_from_client(name: str, client: str) -> str:
    return f"account:{client_key(client)}:{name}"[:KEY_LENGTH]  # user names are case-sensitive


def from_client(client: str) -> str:
    return f"client:{client_key(client)}"


def of_session(web_session_id: str) -> str:
    return f"session:{web_session_id}"


async def record_attempt(*, session: AsyncSession, limits: Mapping[str, Limit], now: datetime) -> Attempt:
    """Record an attempt under each key: a unit of work of its own, committed before `check_attempt`
    counts, so that of attempts sent at once each sees those recorded before its own count and at most
    one goes ahead."""
    rows = [LoginFailure(id=new_id(), key=key, at=now) for key in limits]
    for key, limit in limits.items():
        await session.execute(
            delete(LoginFailure).where(LoginFailure.key == key, LoginFailure.at <= now - limit.memory)
        )
    session.add_all(rows)
    return Attempt(tuple(r.id for r in rows), tuple(limits), now)


async def check_attempt(*, session: AsyncSession, attempt: Attempt, limits: Mapping[str, Limit]) -> None:
    """Let a recorded attempt go ahead unless failures before it under a key say to wait.

    Raises:
        TooManyAttempts: with the seconds until the longest wait ends; the attempt's record is dropped
        (raised with `keep_writes`).
    """
    wait = timedelta(0)
    now = attempt.at
    for row_id, key in zip(attempt.row_ids, attempt.keys, strict=True):
        # Every other record under the key counts, including attempts still being checked.
        limit = limits[key]
        query = select(func.count(), func.max(LoginFailure.at)).where(
            LoginFailure.key == key, LoginFailure.at > now - limit.memory, LoginFailure.id != row_id
        )
        failures, last = (await session.execute(query)).one()
        if failures and last is not None:
            wait = max(wait, last + limit.wait_after(failures) - now)
    if wait > timedelta(0):
        await session.execute(delete(LoginFailure).where(LoginFailure.id.in_(attempt.row_ids)))
        raise keep_writes(session, TooManyAttempts(max(1, math.ceil(wait.total_seconds()))))


async def succeeded(*, session: AsyncSession, attempt: Attempt, forget: str) -> None:
    """The password was right: drop this attempt's records and every failure under `forget` (no commit)."""
    await session.execute(
        delete(LoginFailure).where(or_(LoginFailure.id.in_(attempt.row_ids), LoginFailure.key == forget))
    )


def _duration(seconds: int) -> str:
    if seconds < 120:
        return f"{seconds} second{'' if seconds == 1 else 's'}"
    return f"{math.ceil(seconds / 60)} minutes"
