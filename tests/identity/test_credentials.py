"""Per-user server credentials: sealed at rest (AES-GCM bound to user and server), opened only with the
console's secret, never logged, and every call (and every resume) goes out with its OWNER's credential.

The end-to-end tests use two real MCP servers as their own processes: the connect demo server (the
"Example Tracker", which tells its MCP users apart by their bearer token) and the MRTR test server over
Streamable HTTP (the session's `mrtr_http` fixture), registered as per-user servers.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, text, update
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit import Actor
from console.audit.models import AuditEvent
from console.calls.models import Call
from console.db import create_engine, session_factory
from console.identity.credentials import CredentialCipher, SecretMissing, credential_for, save_credential
from console.identity.models import ServerCredential, User
from console.transactions import transaction
from tests.harness import (
    Console,
    ServerSpec,
    form_fields,
    html,
    one,
    register_server,
    result_text,
    running_console,
    seed,
    signed_in,
)
from tests.processes import ServerProcess
from tests.tracker import Tracker

pytestmark = pytest.mark.anyio

SECRET = "console-secret-" + "k" * 32  # CONSOLE_SECRET_KEY: at least 32 characters
TRACKER_MESSAGE = "Connect your Example Tracker account so the agent can create issues for you."


def raw_token(who: str) -> str:
    """A credential value distinctive enough that finding its bytes anywhere means it leaked."""
    return f"tok-{who}-{secrets.token_hex(16)}"


# --- setup: a per-user server and saved credentials, through the console's own services ----------


@asynccontextmanager
async def db_session(database_url: str) -> AsyncIterator[AsyncSession]:
    engine = create_engine(database_url)
    try:
        async with transaction(session_factory(engine)) as session:
            yield session
    finally:
        await engine.dispose()


async def user_id(database_url: str, name: str) -> str:
    async with db_session(database_url) as session:
        found: str = (await session.execute(select(User.id).where(User.name == name))).scalar_one()
        return found


async def add_per_user_server(database_url: str, name: str, url: str, header: str = "Authorization") -> str:
    """Register an HTTP server of team `platform` that wants each user's own credential; its id."""
    async with db_session(database_url) as session:
        server = await register_server(session, name, ServerSpec(url=url, credential_name=header))
        server_id: str = server.id
        return server_id


async def save_for(
    database_url: str, name: str, server_id: str, secret: str, console_secret: str | None = SECRET
) -> None:
    uid = await user_id(database_url, name)
    async with db_session(database_url) as session:
        await save_credential(
            session=session,
            cipher=CredentialCipher(console_secret),
            actor=Actor("user", uid),
            user_id=uid,
            server_id=server_id,
            secret=secret,
        )


async def open_for(
    database_url: str, name: str, server_id: str, console_secret: str | None = SECRET
) -> str | None:
    uid = await user_id(database_url, name)
    async with db_session(database_url) as session:
        return await credential_for(
            session=session, cipher=CredentialCipher(console_secret), user_id=uid, server_id=server_id
        )


async def stored_text(database_url: str) -> bytes:
    """Everything the database holds that a token could leak into, as bytes.

    SQLite: the database file and its WAL/SHM files, byte for byte. PostgreSQL: the credential rows
    and every text column of the audit log.
    """
    url = make_url(database_url)
    if url.get_backend_name() == "sqlite":
        assert url.database is not None
        path = Path(url.database)
        files = sorted(path.parent.glob(path.name + "*"))
        assert path in files
        return b"".join(f.read_bytes() for f in files)
    async with db_session(database_url) as session:
        credentials = (
            await session.execute(text("SELECT sealed, details_json, kind FROM identity_server_credential"))
        ).all()
        audit = (
            await session.execute(
                text(
                    "SELECT actor_type, actor_id, action, subject_type, subject_id, call_id, payload_json"
                    " FROM audit_event"
                )
            )
        ).all()
    assert credentials, "no credential rows at all"
    return "\n".join(str(value) for row in [*credentials, *audit] for value in row).encode()


# --- sealing ----------------------------------------------------------------------------------


async def test_a_saved_credential_is_sealed_and_only_its_owner_row_opens_it(
    database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    await seed(database_url, {})
    server_id = await add_per_user_server(database_url, "tracker", "https://tracker.example/mcp")
    other_server = await add_per_user_server(database_url, "wiki", "https://wiki.example/mcp")
    dev_token, lead_token = raw_token("dev"), raw_token("lead")
    await save_for(database_url, "dev", server_id, dev_token)
    await save_for(database_url, "lead", server_id, lead_token)
    await save_for(database_url, "lead", other_server, raw_token("lead-wiki"))

    # What is stored is sealed: neither token (nor its UTF-8 bytes in any form) is in the database.
    stored = await stored_text(database_url)
    dev_id, lead_id = await user_id(database_url, "dev"), await user_id(database_url, "lead")
    assert dev_id.encode() in stored  # the search does see what was written (credential_saved events)
    for token in (dev_token, lead_token):
        assert token.encode() not in stored
    async with db_session(database_url) as session:
        rows = {
            (row.user_id, row.server_id): row
            for row in (await session.execute(select(ServerCredential))).scalars()
        }
        events = list(
            (
                await session.execute(select(AuditEvent).where(AuditEvent.action == "credential_saved"))
            ).scalars()
        )
    dev_row = rows[(dev_id, server_id)]
    assert dev_row.kind == "bearer"
    assert dev_token not in dev_row.sealed
    assert dev_row.details_json == "{}"
    assert len(events) == 3  # each save is audited, without the value
    assert all(dev_token not in e.payload_json and lead_token not in e.payload_json for e in events)

    # Each owner gets their own value back.
    assert await open_for(database_url, "dev", server_id) == dev_token
    assert await open_for(database_url, "lead", server_id) == lead_token
    assert await open_for(database_url, "viewer", server_id) is None

    # Sealing is randomised: saving the same value again gives a different ciphertext.
    await save_for(database_url, "dev", server_id, dev_token)
    async with db_session(database_url) as session:
        resealed = (
            await session.execute(
                select(ServerCredential.sealed).where(
                    ServerCredential.user_id == dev_id, ServerCredential.server_id == server_id
                )
            )
        ).scalar_one()
    assert resealed != dev_row.sealed
    assert await open_for(database_url, "dev", server_id) == dev_token

    # dev's ciphertext copied onto lead's row (same server) or onto lead's row of another server does
    # not open: the row's user and server are the associated data of AES-GCM.
    async with db_session(database_url) as session:
        for target_server in (server_id, other_server):
            await session.execute(
                update(ServerCredential)
                .where(ServerCredential.user_id == lead_id, ServerCredential.server_id == target_server)
                .values(sealed=resealed)
            )
        await session.commit()
    for target_server in (server_id, other_server):
        with pytest.raises(SecretMissing, match="cannot be decrypted"):
            await open_for(database_url, "lead", target_server)
    assert await open_for(database_url, "dev", server_id) == dev_token

    # A different console secret cannot open it, and says why.
    with pytest.raises(SecretMissing, match=r"cannot be decrypted \(was the console secret changed\?\)"):
        await open_for(database_url, "dev", server_id, console_secret="another-secret-" + "x" * 32)
    # Without any secret, it cannot be opened either, and the message names the setting.
    with pytest.raises(SecretMissing, match="CONSOLE_SECRET_KEY"):
        await open_for(database_url, "dev", server_id, console_secret=None)

    for token in (dev_token, lead_token):
        assert token not in caplog.text


async def test_without_a_console_secret_nothing_is_saved(database_url: str) -> None:
    await seed(database_url, {})
    server_id = await add_per_user_server(database_url, "tracker", "https://tracker.example/mcp")
    token = raw_token("dev")
    with pytest.raises(SecretMissing, match="CONSOLE_SECRET_KEY") as raised:
        await save_for(database_url, "dev", server_id, token, console_secret=None)
    assert raised.value.code == "secret_missing"
    with pytest.raises(SecretMissing, match="CONSOLE_SECRET_KEY"):
        CredentialCipher("").seal(token, user_id="u", server_id="s")
    async with db_session(database_url) as session:
        assert list((await session.execute(select(ServerCredential))).scalars()) == []
        saved_events = (
            await session.execute(select(AuditEvent).where(AuditEvent.action == "credential_saved"))
        ).all()
        assert saved_events == []
    assert token.encode() not in await stored_text_or_empty(database_url)


async def stored_text_or_empty(database_url: str) -> bytes:
    if make_url(database_url).get_backend_name() == "sqlite":
        return await stored_text(database_url)
    async with db_session(database_url) as session:
        audit = (await session.execute(text("SELECT payload_json FROM audit_event"))).scalars()
        return "\n".join(audit).encode()


# --- the tracker (tests/tracker.py): each user's calls carry that user's own token --------------


async def create_issue(console: Console, who: str, title: str) -> dict[str, Any]:
    return await console.call("tracker", "create_issue", {"title": title}, who=who)


async def connect_and_finish(
    console: Console, tracker: Tracker, call: dict[str, Any], who: str
) -> dict[str, Any]:
    """`who` opens their link at the tracker, signs in there, and answers accept: the call's next state."""
    assert call["status"] == "awaiting_input", call
    [pending] = call["pending"]
    assert (pending["mode"], pending["message"]) == ("url", TRACKER_MESSAGE)
    link = (await console.question(pending["id"], who=who))["url"]
    connected = await tracker.connect(link, who)
    assert connected.status_code == 200, connected.text
    assert "Connected." in connected.text
    assert f"Signed in as {who}." in connected.text
    answered = await console.answer(pending["id"], "accept", who=who)
    assert answered.status_code == 200, answered.text
    return await console.settle(call["id"], who=who, after_round=call["round"])


async def test_each_users_calls_carry_their_own_credential(
    database_url: str, tracker: Tracker, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    tokens = await seed(database_url, {})
    server_id = await add_per_user_server(database_url, "tracker", tracker.process.url)
    for name in ("dev", "lead"):
        await save_for(database_url, name, server_id, tracker.users[name].token)

    async with running_console(database_url, {}, tokens=tokens, secret_key=SECRET) as console:
        first = await create_issue(console, "dev", "Login is slow")
        assert first["status"] == "awaiting_input", first
        link = (await console.question(first["pending"][0]["id"], who="dev"))["url"]
        assert await tracker.stats() == {"connect_requests": 0, "connections": []}

        # Consent given but nothing finished at the tracker yet: it asks again with the identical link.
        again = await console.answer_and_settle(first, "accept", who="dev")
        assert again["status"] == "awaiting_input", again
        assert again["round"] == first["round"] + 1
        assert (await console.question(again["pending"][0]["id"], who="dev"))["url"] == link

        done = await connect_and_finish(console, tracker, again, "dev")
        assert result_text(done) == "Issue created for dev: Login is slow"
        assert (await tracker.stats())["connections"] == ["dev"]

        # lead's own agent: the tracker sees lead (lead's token), not dev's connection.
        lead_first = await create_issue(console, "lead", "Search is broken")
        assert lead_first["status"] == "awaiting_input", lead_first
        lead_link = (await console.question(lead_first["pending"][0]["id"], who="lead"))["url"]
        assert lead_link != link
        lead_done = await connect_and_finish(console, tracker, lead_first, "lead")
        assert result_text(lead_done) == "Issue created for lead: Search is broken"

        # Now both are connected: each call is created for its own owner straight away.
        assert result_text(await create_issue(console, "dev", "Third")) == "Issue created for dev: Third"
        assert result_text(await create_issue(console, "lead", "Fourth")) == "Issue created for lead: Fourth"
        assert (await tracker.stats())["connections"] == ["dev", "lead"]

        # lead2 has no credential for the tracker: the call is refused at start, nothing is recorded.
        run_id = await console.new_run("lead2")
        refused = await console.start(
            "tracker",
            "tools/call",
            {"name": "create_issue", "arguments": {"title": "x"}},
            who="lead2",
            run_id=run_id,
        )
        assert refused.status_code == 422, refused.text
        message = refused.json()["error"]["message"]
        assert "lead2 has no credential for server 'tracker'" in message
        assert "Connections page" in message
        async with transaction(console.runtime.factory) as session:
            recorded = (await session.execute(select(Call.id).where(Call.run_id == run_id))).all()
        assert recorded == []

    stored = await stored_text(database_url)
    for user in tracker.users.values():
        assert user.token not in caplog.text
        assert user.token.encode() not in stored
        assert user.password not in caplog.text


# --- resumes carry the owner's credential, whoever answers; the Connections page ---------------------


async def connections_row(who: Any, server_id: str) -> tuple[str, str]:
    """The status text of one server on `who`'s Connections page, and the whole page's HTML."""
    page = await who.client.get("/connections")
    assert page.status_code == 200, page.text
    section = one(html(page), f"#connection-{server_id}")
    return " ".join(one(section, ".status").get_text(" ").split()), page.text


async def post_connection(who: Any, server_id: str, action: str, secret: str = "") -> None:
    page = await who.client.get("/connections")
    form = one(html(page), f'form[action="/connections/{server_id}"]')
    data = {**form_fields(form), "action": action, "secret": secret}
    response = await who.client.post(f"/connections/{server_id}", data=data)
    assert response.status_code == 303, response.text
    assert response.headers["location"] == "/connections"


async def test_the_resume_uses_the_owners_credential_even_when_an_approver_answers(
    database_url: str, mrtr_http: ServerProcess, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    tokens = await seed(database_url, {})
    server_id = await add_per_user_server(database_url, "personal", mrtr_http.url)
    dev_token, lead_token = raw_token("dev"), raw_token("lead")
    async with (
        running_console(database_url, {}, tokens=tokens, secret_key=SECRET) as console,
        signed_in(console, "dev") as dev,
        signed_in(console, "lead") as lead,
    ):
        # Nobody has one yet: dev's agent cannot start a call on the server.
        assert (await connections_row(dev, server_id))[0] == "not connected"
        refused = await console.start(
            "personal", "tools/call", {"name": "two_rounds", "arguments": {"topic": "t"}}, who="dev"
        )
        assert refused.status_code == 422, refused.text
        assert "Connections page" in refused.json()["error"]["message"]

        # dev saves a token on the Connections page: connected for dev only, and never shown again.
        await post_connection(dev, server_id, "save", dev_token)
        status, page = await connections_row(dev, server_id)
        assert status == "connected"
        assert dev_token not in page
        assert "Replace your token" in page
        assert (await connections_row(lead, server_id))[0] == "not connected"
        assert await open_for(database_url, "dev", server_id) == dev_token
        assert await open_for(database_url, "lead", server_id) is None

        topic = secrets.token_hex(4)
        call = await console.call("personal", "two_rounds", {"topic": topic}, who="dev")
        assert call["status"] == "awaiting_input", call
        # lead (an approver without any credential of their own) answers: the resume goes out as dev.
        second = await console.answer_and_settle(call, "accept", {"name": "Ada"}, who="lead")
        assert second["status"] == "awaiting_input", second
        assert second["pending"][0]["message"] == f"Thanks Ada. How much and how many for {topic}?"

        # lead saves a token too, then dev removes theirs: lead's answer still cannot send lead's token.
        await post_connection(lead, server_id, "save", lead_token)
        assert (await connections_row(lead, server_id))[0] == "connected"
        await post_connection(dev, server_id, "delete")
        assert (await connections_row(dev, server_id))[0] == "not connected"
        assert await open_for(database_url, "dev", server_id) is None
        failed = await console.answer_and_settle(second, "accept", {"amount": 5, "count": 2}, who="lead")
        assert failed["status"] == "failed", failed
        error = failed["error"]["message"]
        assert "dev has no credential for server 'personal'" in error
        assert "Connections page" in error
        assert "lead" not in error

    for token in (dev_token, lead_token):
        assert token not in caplog.text
        assert token.encode() not in await stored_text(database_url)
