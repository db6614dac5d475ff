"""People connect their own accounts at a server behind MCP authorization, through the console's pages.

The server is tests/servers/oauth_server.py as its own process (one per session and set of knobs, shared
by the tests: tests/oauth/notes.py): an MCP server built on the `mcp` SDK's
server-side auth that verifies every bearer token, with its own authorization server (dynamic client
registration, PKCE, refresh tokens, revocation, RFC 9207 `iss`) and a sign-in page where a person types
their name. The console's browser (an in-process client with its own cookies) presses Connect; the
authorization server's pages are visited over HTTP as a person would, and the redirect back is followed
into the console's callback.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest
from sqlalchemy import select

from console.calls.models import DispatchJob
from console.calls.questions.decisions import expire_due
from console.db import utcnow
from console.mcp.admin import edit_server, server_for_admin, settings_of
from console.mcp.sealed import Outbound
from console.transactions import transaction
from tests.harness import (
    TEAM,
    Browser,
    Console,
    ServerSpec,
    form_fields,
    html,
    one,
    running_console,
    signed_in,
    text,
)
from tests.oauth.notes import Notes, NotesServers

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def console_with(database_url: str, server: Notes) -> AsyncIterator[Console]:
    async with running_console(database_url, {"notes": ServerSpec(url=server.url, oauth=True)}) as console:
        yield console


async def server_id(console: Console, who: Browser) -> str:
    page = await who.client.get("/connections")
    assert page.status_code == 200, page.text
    section = one(html(page), "section.connection")
    identifier = section.get("id")
    assert isinstance(identifier, str)
    return identifier.removeprefix("connection-")


def onward(response: httpx.Response) -> str:
    """Where the console's page sends the browser (a form's post may not redirect to another site)."""
    assert response.status_code == 200, response.text
    link = one(html(response), "main a").get("href")
    assert isinstance(link, str)
    return link


async def press_connect(who: Browser, server: str) -> str:
    """Connect on the Connections page; where the console sends the browser."""
    return onward(await who.client.post(f"/connections/{server}/oauth", data={"csrf_token": who.csrf}))


async def connect_from_question(who: Browser, elicitation_id: str, name: str) -> httpx.Response:
    """Connect on the question's page, sign in there as `name`, and come back."""
    pressed = await who.client.post(f"/elicitations/{elicitation_id}/connect", data={"csrf_token": who.csrf})
    return await come_back(who, await sign_in_there(onward(pressed), name))


def connect_question(call: dict[str, Any]) -> dict[str, Any]:
    """The question a call waits on while its owner connects."""
    assert call["status"] == "awaiting_input", call
    [question] = call["pending"]
    assert question["kind"] == "connect", question
    found: dict[str, Any] = question
    return found


async def sign_in_there(authorize_url: str, name: str) -> str:
    """The person at the authorization server: its sign-in page, then the redirect back to the console."""
    async with httpx.AsyncClient(timeout=10) as there:
        to_login = await there.get(authorize_url)
        assert to_login.status_code == 302, to_login.text
        assert "/login?" in to_login.headers["location"], to_login.headers["location"]
        page = await there.get(to_login.headers["location"])
        assert page.status_code == 200, page.text
        form = one(html(page), "form")
        back = await there.post(str(page.url.join("/login")), data={**form_fields(form), "name": name})
        assert back.status_code == 302, back.text
        return back.headers["location"]


async def come_back(who: Browser, callback_url: str) -> httpx.Response:
    """The browser arrives at the console's callback (the path and query the authorization server sent)."""
    parts = urlsplit(callback_url)
    return await who.client.get(f"{parts.path}?{parts.query}")


async def connect(who: Browser, server: str, name: str) -> None:
    back = await come_back(who, await sign_in_there(await press_connect(who, server), name))
    assert back.status_code == 303, back.text
    assert back.headers["location"] == f"/connections#connection-{server}"


async def whoami(console: Console, who: str) -> dict[str, Any]:
    return await console.call("notes", "whoami", {}, who=who)


async def test_a_person_connects_and_their_calls_carry_their_own_token(
    database_url: str, notes: Notes
) -> None:
    async with console_with(database_url, notes) as console, signed_in(console, "dev") as dev:
        server = await server_id(console, dev)
        authorize = await press_connect(dev, server)
        query = parse_qs(urlsplit(authorize).query)
        assert query["code_challenge_method"] == ["S256"]
        assert query["resource"] == [notes.url]
        assert query["scope"] == ["notes:read offline_access"]  # it offers refresh tokens
        back = await come_back(dev, await sign_in_there(authorize, "dana"))
        assert back.status_code == 303, back.text

        call = await whoami(console, "dev")
        assert call["status"] == "completed", call
        assert call["result"]["content"][0]["text"] == "signed in as dana"

        page = await dev.client.get("/connections")
        shown = text(one(html(page), f"#connection-{server}"))
        assert "connected at 127.0.0.1" in shown
        assert "notes:read" in shown
        assert [e["event"] for e in notes.events()] == ["issued"]
        assert [e["resource"] for e in notes.events()] == [notes.url]
        connected = await console.audit_payloads("oauth_connected")
        assert [p["scope"] for p in connected] == ["notes:read offline_access"]


async def test_a_call_waits_for_its_owner_to_connect_and_then_completes(
    database_url: str, notes: Notes
) -> None:
    async with console_with(database_url, notes) as console, signed_in(console, "dev") as dev:
        call = await whoami(console, "dev")
        question = connect_question(call)
        host = urlsplit(notes.url).netloc
        assert (
            question["message"]
            == f"Connect notes: you will sign in at {host} and grant notes:read offline_access."
        )
        page = await dev.client.get(f"/elicitations/{question['id']}")
        assert "Connect notes" in text(one(html(page), "#connect-form"))
        assert text(one(html(page), ".authorization-server")) == host

        back = await connect_from_question(dev, question["id"], "dana")
        assert back.status_code == 303, back.text
        assert back.headers["location"] == f"/elicitations/{question['id']}"
        done = await console.settle(call["id"], after_round=call["round"])
        assert done["status"] == "completed", done
        assert done["result"]["content"][0]["text"] == "signed in as dana"
        decided = await console.question(question["id"], who="dev")
        assert (decided["status"], decided["decided_by"]) == ("accepted", "dev")
        asked = await console.audit_payloads("connect_asked")
        assert [(p["authorization_server"], p["scope"]) for p in asked] == [
            (host, "notes:read offline_access")
        ]


async def test_only_the_owner_sees_and_answers_a_connect_question(database_url: str, notes: Notes) -> None:
    async with console_with(database_url, notes) as console:
        call = await whoami(console, "dev")
        question = connect_question(call)
        assert [q["id"] for q in await console.pending_questions("dev")] == [question["id"]]
        assert await console.pending_questions("lead") == []
        async with signed_in(console, "lead") as lead:
            page = await lead.client.get(f"/elicitations/{question['id']}")
            assert page.status_code == 200
            assert html(page).select("#connect-form, form[action$='/connect']") == []
            assert "waits for dev" in text(one(html(page), "main"))
            pressed = await lead.client.post(
                f"/elicitations/{question['id']}/connect", data={"csrf_token": lead.csrf}
            )
            assert pressed.status_code == 404, pressed.text
            declined = await lead.client.post(
                f"/elicitations/{question['id']}",
                data={"csrf_token": lead.csrf, "action": "decline", "digest": question.get("digest", "")},
            )
            assert declined.status_code == 403, declined.text
        answered = await console.answer(question["id"], "cancel", who="lead")
        assert answered.status_code == 403, answered.text
        assert "only be answered by the person whose agent made the call" in answered.text
        for other, page_status in (("viewer", 200), ("outsider", 404)):  # an auditor; another team's approver
            async with signed_in(console, other) as them:
                seen = await them.client.get(f"/elicitations/{question['id']}")
                assert seen.status_code == page_status, seen.text
                assert html(seen).select("#connect-form, form[action$='/connect']") == []
                pressed = await them.client.post(
                    f"/elicitations/{question['id']}/connect", data={"csrf_token": them.csrf}
                )
                assert pressed.status_code == 404, pressed.text
        refused = await console.audit_payloads("access_refused")
        assert [p.get("attempt") for p in refused].count("connect") == 3
        assert (await console.get_call(call["id"]))["status"] == "awaiting_input"


async def test_a_connect_question_is_accepted_only_once_connected_and_a_decline_ends_the_call(
    database_url: str, notes: Notes
) -> None:
    async with console_with(database_url, notes) as console:
        call = await whoami(console, "dev")
        question = connect_question(call)
        early = await console.answer(question["id"], "accept", who="dev")
        assert early.status_code == 422, early.text
        assert "connect the account first" in early.text
        declined = await console.answer_and_settle(call, "decline", who="dev")
        assert declined["status"] == "declined", declined
        assert declined["error"]["message"] == (
            "The account at notes was not connected (its owner declined), so the call was declined."
        )


async def test_a_teammate_cannot_use_anothers_token(database_url: str, notes: Notes) -> None:
    async with console_with(database_url, notes) as console, signed_in(console, "dev") as dev:
        await connect(dev, await server_id(console, dev), "dana")
        assert (await whoami(console, "dev"))["status"] == "completed"
        theirs = await whoami(console, "lead")
        question = connect_question(theirs)
        assert (await console.question(question["id"], who="lead"))["owner"] == "lead"


async def test_an_expired_token_is_refreshed_without_the_person(
    database_url: str, notes_servers: NotesServers
) -> None:
    # Tokens live 30 s: within the console's refresh margin, so each use renews the grant first.
    short = notes_servers(OAUTH_TOKEN_SECONDS="30")  # noqa: S106  # seconds
    async with console_with(database_url, short) as console, signed_in(console, "dev") as dev:
        await connect(dev, await server_id(console, dev), "dana")
        for _ in range(2):
            call = await whoami(console, "dev")
            assert call["result"]["content"][0]["text"] == "signed in as dana", call
        assert [e["event"] for e in short.events()] == ["issued", "refreshed", "refreshed"]
        assert len(await console.audit_payloads("oauth_refreshed")) == 2


async def test_a_token_the_server_refuses_is_refreshed_once_and_the_call_sent_again(
    database_url: str, notes: Notes
) -> None:
    async with console_with(database_url, notes) as console, signed_in(console, "dev") as dev:
        await connect(dev, await server_id(console, dev), "dana")
        assert (await whoami(console, "dev"))["status"] == "completed"
        async with httpx.AsyncClient(timeout=10) as http:
            forgot = await http.post(notes.url.removesuffix("/mcp") + "/test/forget-access-tokens")
        assert forgot.status_code == 200
        call = await whoami(console, "dev")
        assert call["status"] == "completed", call
        assert call["result"]["content"][0]["text"] == "signed in as dana"
        assert [e["event"] for e in notes.events()] == ["issued", "refreshed"]


async def test_disconnect_revokes_and_the_next_call_asks_to_connect_again(
    database_url: str, notes: Notes
) -> None:
    async with console_with(database_url, notes) as console, signed_in(console, "dev") as dev:
        server = await server_id(console, dev)
        await connect(dev, server, "dana")
        assert (await whoami(console, "dev"))["status"] == "completed"
        response = await dev.client.post(f"/connections/{server}/disconnect", data={"csrf_token": dev.csrf})
        assert response.status_code == 303
        assert [e["event"] for e in notes.events()] == ["issued", "revoked"]
        assert [p["revoked"] for p in await console.audit_payloads("oauth_disconnected")] == [True]
        connect_question(await whoami(console, "dev"))
        page = await dev.client.get("/connections")
        assert "not connected" in text(one(html(page), f"#connection-{server}"))


async def test_a_forged_or_replayed_state_is_refused_with_a_page_and_an_audit_event(
    database_url: str, notes: Notes
) -> None:
    async with console_with(database_url, notes) as console, signed_in(console, "dev") as dev:
        forged = await dev.client.get("/oauth/callback?" + urlencode({"state": "forged", "code": "x"}))
        assert forged.status_code == 400
        assert "unknown or was already used" in text(one(html(forged), "main"))

        server = await server_id(console, dev)
        callback = await sign_in_there(await press_connect(dev, server), "dana")
        assert (await come_back(dev, callback)).status_code == 303
        replayed = await come_back(dev, callback)
        assert replayed.status_code == 400
        reasons = [p["reason"] for p in await console.audit_payloads("oauth_refused")]
        assert reasons == ["state_unknown", "state_unknown"]


async def test_a_forged_state_while_a_real_sign_in_is_pending_is_refused_and_the_real_one_completes(
    database_url: str, notes: Notes
) -> None:
    async with console_with(database_url, notes) as console, signed_in(console, "dev") as dev:
        call = await whoami(console, "dev")
        question = connect_question(call)
        pressed = await dev.client.post(
            f"/elicitations/{question['id']}/connect", data={"csrf_token": dev.csrf}
        )
        callback = await sign_in_there(onward(pressed), "dana")  # signed in there, not back yet
        parts = urlsplit(callback)
        real = {k: v[0] for k, v in parse_qs(parts.query).items()}
        near = real["state"][:-1] + ("A" if real["state"][-1] != "A" else "B")
        for state in ("forged", near, ""):  # with the real code, in the browser that began the sign-in
            forged = await dev.client.get(f"{parts.path}?{urlencode({**real, 'state': state})}")
            assert forged.status_code == 400, forged.text
            assert "unknown or was already used" in text(one(html(forged), "main"))
        reasons = [p["reason"] for p in await console.audit_payloads("oauth_refused")]
        assert reasons == ["state_unknown"] * 3
        assert (await console.get_call(call["id"]))["status"] == "awaiting_input"

        back = await come_back(dev, callback)
        assert back.status_code == 303, back.text
        done = await console.settle(call["id"], after_round=call["round"])
        assert done["status"] == "completed", done
        assert done["result"]["content"][0]["text"] == "signed in as dana"


async def test_an_auditor_or_another_team_cannot_finish_someones_sign_in_nor_a_teammates_connect_their_call(
    database_url: str, notes: Notes
) -> None:
    """A sign-in is its starter's: an auditor's or another team's browser bringing it back is refused and
    leaves it for its owner; another team cannot start or end a connection to this team's server; a
    teammate who connects their own account answers none of dev's connect questions."""
    async with console_with(database_url, notes) as console, signed_in(console, "dev") as dev:
        call = await whoami(console, "dev")
        question = connect_question(call)
        server = await server_id(console, dev)
        callback = await sign_in_there(await press_connect(dev, server), "dana")
        for who in ("viewer", "outsider"):
            async with signed_in(console, who) as them:
                theirs = await come_back(them, callback)
                assert theirs.status_code == 400, theirs.text
                assert "started by someone else" in text(one(html(theirs), "main"))
        async with signed_in(console, "outsider") as outsider:
            for action in ("oauth", "disconnect"):
                tried = await outsider.client.post(
                    f"/connections/{server}/{action}", data={"csrf_token": outsider.csrf}
                )
                assert tried.status_code == 404, tried.text
        async with signed_in(console, "lead") as lead:
            await connect(lead, server, "lena")
        assert (await console.question(question["id"], who="dev"))["status"] == "pending"
        reasons = [p["reason"] for p in await console.audit_payloads("oauth_refused")]
        assert reasons == ["state_other_user", "state_other_user"]

        back = await come_back(dev, callback)
        assert back.status_code == 303, back.text
        done = await console.settle(call["id"], after_round=call["round"])
        assert done["result"]["content"][0]["text"] == "signed in as dana"
        assert len(await console.audit_payloads("oauth_connected")) == 2  # lead's own, then dev's


async def test_someone_elses_or_another_browsers_sign_in_is_refused(database_url: str, notes: Notes) -> None:
    async with console_with(database_url, notes) as console, signed_in(console, "dev") as dev:
        server = await server_id(console, dev)
        callback = await sign_in_there(await press_connect(dev, server), "dana")
        async with signed_in(console, "lead") as lead:
            theirs = await come_back(lead, callback)
        assert theirs.status_code == 400
        assert "started by someone else" in text(one(html(theirs), "main"))
        async with signed_in(console, "dev") as devs_other_browser:
            elsewhere = await come_back(devs_other_browser, callback)
        assert elsewhere.status_code == 400
        assert "another browser" in text(one(html(elsewhere), "main"))
        reasons = [p["reason"] for p in await console.audit_payloads("oauth_refused")]
        assert reasons == ["state_other_user", "state_other_browser"]
        connect_question(await whoami(console, "dev"))


async def test_an_answer_from_another_issuer_is_refused(database_url: str, notes: Notes) -> None:
    async with console_with(database_url, notes) as console, signed_in(console, "dev") as dev:
        callback = await sign_in_there(await press_connect(dev, await server_id(console, dev)), "dana")
        parts = urlsplit(callback)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        query["iss"] = "https://attacker.example"
        refused = await dev.client.get(f"{parts.path}?{urlencode(query)}")
        assert refused.status_code == 400
        assert "another authorization server" in text(one(html(refused), "main"))
        assert [p["reason"] for p in await console.audit_payloads("oauth_refused")] == ["issuer_mismatch"]
        connect_question(await whoami(console, "dev"))


async def test_an_authorization_server_without_pkce_is_refused(
    database_url: str, notes_servers: NotesServers
) -> None:
    no_pkce = notes_servers(OAUTH_HIDE_PKCE="1")
    async with console_with(database_url, no_pkce) as console, signed_in(console, "dev") as dev:
        refused = await dev.client.post(
            f"/connections/{await server_id(console, dev)}/oauth", data={"csrf_token": dev.csrf}
        )
        assert refused.status_code == 400
        assert "does not support PKCE with S256" in text(one(html(refused), "main"))
        assert no_pkce.events() == []
        reasons = [p["reason"] for p in await console.audit_payloads("oauth_refused")]
        assert reasons == ["pkce_unsupported"]


async def test_metadata_for_another_resource_is_refused_with_a_page_and_an_audit_event(
    database_url: str, notes_servers: NotesServers
) -> None:
    elsewhere = notes_servers(OAUTH_OTHER_RESOURCE="1")
    async with console_with(database_url, elsewhere) as console, signed_in(console, "dev") as dev:
        question = connect_question(await whoami(console, "dev"))
        refused = await dev.client.post(
            f"/elicitations/{question['id']}/connect", data={"csrf_token": dev.csrf}
        )
        assert refused.status_code == 400
        assert "is for https://other-notes.example/mcp, not for this server" in text(
            one(html(refused), "main")
        )
        assert elsewhere.events() == []  # nothing was asked of its authorization server
        reasons = [p["reason"] for p in await console.audit_payloads("oauth_refused")]
        assert reasons == ["resource_mismatch"]


async def test_a_grant_is_never_sent_as_a_typed_in_credential_after_the_server_changes_mode(
    database_url: str, notes: Notes
) -> None:
    async with console_with(database_url, notes) as console, signed_in(console, "dev") as dev:
        await connect(dev, await server_id(console, dev), "dana")
        async with transaction(console.runtime.factory) as session:
            server = await server_for_admin(session=session, by=None, team_name=TEAM, name="notes")
            typed = replace(settings_of(server), oauth=False, credential_name="Authorization")
            await edit_server(
                session=session,
                by=None,
                team_name=TEAM,
                name="notes",
                settings=typed,
                outbound=Outbound.of(console.runtime.settings),
            )
        refused = await console.start("notes", "tools/call", {"name": "whoami", "arguments": {}})
        assert refused.status_code == 422, refused.text
        assert "dev has no credential for server 'notes'" in refused.text


async def test_an_unanswered_connect_question_expires_and_cancels_the_call(
    database_url: str, notes: Notes
) -> None:
    async with console_with(database_url, notes) as console:
        call = await whoami(console, "dev")
        connect_question(call)
        ttl = console.runtime.settings.elicitation_ttl_seconds
        async with transaction(console.runtime.factory) as session:
            assert await expire_due(session=session, now=utcnow() + timedelta(seconds=ttl - 60)) == []
        async with transaction(console.runtime.factory) as session:
            assert await expire_due(session=session, now=utcnow() + timedelta(seconds=ttl + 60)) == [
                call["id"]
            ]
        ended = await console.get_call(call["id"])
        assert ended["status"] == "cancelled", ended
        assert (
            ended["error"]["message"]
            == "The account at notes was not connected in time, so the call was cancelled."
        )


async def test_an_abandoned_call_never_sends_the_request_it_parked(database_url: str, notes: Notes) -> None:
    async with console_with(database_url, notes) as console, signed_in(console, "dev") as dev:
        call = await whoami(console, "dev")
        connect_question(call)
        abandoned = await console.client.post(
            f"/api/v1/calls/{call['id']}/abandon", headers=console.auth("dev")
        )
        assert abandoned.status_code == 200, abandoned.text
        await connect(dev, await server_id(console, dev), "dana")  # nothing waits now: back to Connections
        async with transaction(console.runtime.factory) as session:
            jobs = (
                await session.execute(select(DispatchJob.status).where(DispatchJob.call_id == call["id"]))
            ).all()
        assert [status for (status,) in jobs] == ["done"]
        assert (await console.get_call(call["id"]))["status"] == "abandoned"
