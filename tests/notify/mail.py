"""Reading what the SMTP server got, and a console that emails through it, driven by the test's clock."""

from __future__ import annotations

import email
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from email.message import EmailMessage
from email.policy import default
from typing import Any

from sqlalchemy import select

from console.calls.fanout import carriers_for
from console.db import utcnow
from console.identity.emails import set_email
from console.identity.models import User
from console.notify.models import Delivery
from console.notify.sender import deliver_due
from console.transactions import transaction
from tests.harness import Console, Mrtr, running_console
from tests.notify.kept import Kept

SENDER = "console@example.test"
ADDRESSES = {name: f"{name}@example.test" for name in ("dev", "lead", "lead2", "viewer", "outsider")}


def received(mailbox: Kept) -> list[tuple[list[str], EmailMessage]]:
    """Each message the SMTP server accepted since the test began: its envelope recipients and the
    message."""
    found = []
    for path in mailbox.paths():
        kept = json.loads(path.read_text())
        message = email.message_from_string(kept["data"], policy=default)
        assert isinstance(message, EmailMessage)
        found.append((kept["to"], message))
    return found


def parts(message: EmailMessage) -> tuple[str, str]:
    text, markup = message.get_body(("plain",)), message.get_body(("html",))
    assert text is not None and markup is not None  # noqa: PT018  # both parts must be there
    return str(text.get_content()), str(markup.get_content())


async def with_addresses(console: Console) -> None:
    async with transaction(console.runtime.factory) as session:
        for name, address in ADDRESSES.items():
            await set_email(session=session, name=name, email=address)
        lead2 = (await session.execute(select(User).where(User.name == "lead2"))).scalar_one()
        lead2.email_notifications = False  # turned email off
        await session.commit()


async def send_due(console: Console, when: timedelta = timedelta(0)) -> int:
    settings = console.runtime.settings
    carriers = carriers_for(settings)
    return await deliver_due(factory=console.runtime.factory, carriers=carriers, now=utcnow() + when)


async def deliveries(console: Console) -> list[Delivery]:
    async with transaction(console.runtime.factory) as session:
        return list((await session.execute(select(Delivery).order_by(Delivery.created_at))).scalars())


def mail_settings(url: str) -> dict[str, Any]:
    return {"smtp_url": url, "mail_from": SENDER}


@asynccontextmanager
async def mailing(database_url: str, mrtr: Mrtr, smtp_url: str, **settings: Any) -> AsyncIterator[Console]:
    """A console emailing through `smtp_url` (sent when the test says), everyone with an address."""
    async with running_console(
        database_url, {"mrtr": mrtr.spec}, notifier=False, **mail_settings(smtp_url), **settings
    ) as console:
        await with_addresses(console)
        yield console
