"""Callbacks to agents: a call started with a `callback_url` is POSTed to a real HTTP receiver process
(tests/servers/http_sink.py) when it needs input and when it ends, with the call object the API returns,
signed with the webhook secret of the token that started it (checked with the `standardwebhooks`
library); the secret is shown once and replaced on the tokens page; a revoked token's callbacks stop;
a URL the console may not reach, or a token without a secret, is refused before anything is recorded.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select
from standardwebhooks import Webhook, WebhookVerificationError

from console.calls.fanout import carriers_for
from console.calls.models import Call
from console.db import utcnow
from console.identity import create_token
from console.notify.models import Delivery
from console.notify.sender import deliver_due
from console.transactions import transaction
from tests.harness import TEAM, Console, Mrtr, html, one, promote, running_console, signed_in, text
from tests.notify.kept import Kept
from tests.notify.receivers import posts
from tests.processes import ServerProcess

pytestmark = pytest.mark.anyio


async def send_due(console: Console, when: timedelta = timedelta(0)) -> int:
    carriers = carriers_for(console.runtime.settings)
    return await deliver_due(factory=console.runtime.factory, carriers=carriers, now=utcnow() + when)


async def new_webhook_secret(console: Console, who: str = "dev") -> str:
    """`who` replaces the webhook secret of their harness token on the tokens page; the new one."""
    async with signed_in(console, who) as person:
        page = html(await person.client.get("/tokens"))
        [form] = page.select('form[action$="/webhook-secret"]')
        shown = await person.client.post(str(form["action"]), data={"csrf_token": person.csrf})
        assert shown.status_code == 200, shown.text
        secret = text(one(html(shown), "#new-webhook-secret"))
        assert secret.startswith("whsec_")
        assert secret not in (await person.client.get("/tokens")).text  # shown once
        return secret


async def callbacks(console: Console) -> list[Delivery]:
    async with transaction(console.runtime.factory) as session:
        query = select(Delivery).where(Delivery.channel == "callback").order_by(Delivery.created_at)
        return list((await session.execute(query)).scalars())


async def test_an_agent_gets_signed_callbacks_when_its_call_needs_input_and_when_it_completes(
    database_url: str, mrtr_memory: Mrtr, receiver: ServerProcess, inbox: Kept
) -> None:
    async with running_console(
        database_url, {"mrtr": mrtr_memory.spec}, notifier=False, allow_private_server_urls=True
    ) as console:
        secret = await new_webhook_secret(console)
        hook = f"{receiver.url}/agent?who=dev"
        call = await console.call("mrtr", "two_rounds", {"topic": "alpha"}, callback_url=hook)
        assert call["status"] == "awaiting_input"
        assert await send_due(console) == 1

        [asked] = posts(inbox)
        assert asked["path"] == "/agent?who=dev"
        event = Webhook(secret).verify(asked["body"], asked["headers"])
        assert (event["type"], event["version"]) == ("call.input_required", 1)
        assert event["data"]["call"] == call  # the call object, as the API returns it
        assert event["data"]["call"]["pending"][0]["answer_url"].endswith(call["pending"][0]["id"])
        tampered = asked["body"].replace('"round": 1', '"round": 2')
        assert tampered != asked["body"]
        with pytest.raises(WebhookVerificationError):
            Webhook(secret).verify(tampered, asked["headers"])

        second = await console.answer_and_settle(call, "accept", {"name": "ada"})
        done = await console.answer_and_settle(second, "accept", {"amount": 5, "count": 2})
        assert done["status"] == "completed"
        assert await send_due(console) == 2  # the second round's question and the result, side by side
        events = [Webhook(secret).verify(p["body"], p["headers"]) for p in posts(inbox)]
        assert [e["type"] for e in events][0] == "call.input_required"
        assert sorted(e["type"] for e in events[1:]) == ["call.completed", "call.input_required"]
        [last] = [e for e in events if e["type"] == "call.completed"]
        assert last["data"]["call"] == await console.get_call(call["id"])
        assert last["data"]["call"]["result"]["content"][0]["text"] == "ada 5 2"
        assert await send_due(console) == 0  # each once

        # The team's admins see the callbacks by the agent's host, never its URL.
        await promote(console, "lead2", role="admin")
        async with signed_in(console, "lead2") as admin:
            page = await admin.client.get(f"/admin/teams/{TEAM}/notifications")
            row = one(html(page), f"#delivery-{(await callbacks(console))[0].id}")
            host = receiver.url.split("//", 1)[1]
            assert text(one(row, "td[data-label=To]")) == f"dev's agent at {host}"
            assert "who=dev" not in page.text


async def test_a_rotated_secret_signs_the_next_callbacks_and_a_revoked_tokens_callbacks_stop(
    database_url: str, mrtr_memory: Mrtr, receiver: ServerProcess, inbox: Kept
) -> None:
    async with running_console(
        database_url, {"mrtr": mrtr_memory.spec}, notifier=False, allow_private_server_urls=True
    ) as console:
        old = await new_webhook_secret(console)
        call = await console.call("mrtr", "two_rounds", {"topic": "alpha"}, callback_url=f"{receiver.url}/a")
        new = await new_webhook_secret(console)
        async with signed_in(console, "dev") as dev:
            [mine] = html(await dev.client.get("/tokens")).select('form[action$="/webhook-secret"]')
        async with signed_in(console, "lead") as lead:  # nobody replaces another person's secret
            tried = await lead.client.post(str(mine["action"]), data={"csrf_token": lead.csrf})
            assert tried.status_code == 404, tried.text
        assert await send_due(console) == 1
        [post] = posts(inbox)
        assert Webhook(new).verify(post["body"], post["headers"])["type"] == "call.input_required"
        with pytest.raises(WebhookVerificationError):
            Webhook(old).verify(post["body"], post["headers"])

        async with signed_in(console, "dev") as dev:
            [revoke] = html(await dev.client.get("/tokens")).select('form[action$="/revoke"]')
            revoked = await dev.client.post(str(revoke["action"]), data={"csrf_token": dev.csrf})
            assert revoked.status_code == 303, revoked.text
        async with transaction(console.runtime.factory) as session:  # dev reads the call with another token
            console.tokens["dev"] = (
                await create_token(session=session, user_name="dev", team_name=TEAM)
            ).token
        done = await console.answer_and_settle(call, "decline")  # the call goes on; its agent is not told
        assert done["status"] == "completed"
        assert await send_due(console) == 0
        assert len(posts(inbox)) == 1
        failed = [d for d in await callbacks(console) if d.status == "failed"]
        assert [(d.event, d.last_error) for d in failed] == [
            ("call.completed", "the token that started the call was revoked")
        ]


async def test_a_callback_url_the_console_may_not_reach_or_cannot_sign_for_is_refused(
    database_url: str, mrtr_memory: Mrtr, receiver: ServerProcess
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}, notifier=False) as console:
        run_id = await console.new_run()

        async def refused(url: Any, who: str = "dev") -> dict[str, str]:
            body = {
                "server": "mrtr",
                "method": "tools/call",
                "params": {"name": "complete_now", "arguments": {}},
                "callback_url": url,
            }
            response = await console.client.post(
                f"/api/v1/runs/{run_id}/calls", json=body, headers=console.auth(who)
            )
            assert response.status_code == 422, response.text
            fields: dict[str, str] = response.json()["error"]["fields"]
            return fields

        assert "loopback" in (await refused("https://127.0.0.1/agent"))["callback_url"]  # a private address
        assert "plain http only" in (await refused(f"{receiver.url}/agent"))["callback_url"]
        assert (await refused("ftp://agent.example.com/x"))["callback_url"] == "an https URL"
        assert "an https URL" in (await refused("http://93.184.216.34/x"))["callback_url"]
        assert "at most 2000" in (await refused("https://agent.example.com/" + "a" * 2000))["callback_url"]
        assert "at most 2000" in (await refused(["https://agent.example.com/"]))["callback_url"]

        async with transaction(console.runtime.factory) as session:  # a token made without a console secret
            bare = await create_token(session=session, user_name="dev", team_name=TEAM, name="bare")
        assert bare.webhook_secret is None
        console.tokens["bare"] = bare.token
        assert "no webhook secret" in (await refused("https://93.184.216.34/x", who="bare"))["callback_url"]

        async with transaction(console.runtime.factory) as session:
            calls = (await session.execute(select(Call).where(Call.run_id == run_id))).scalars().all()
        assert calls == []  # nothing was recorded


async def test_only_the_runs_owner_gives_its_calls_a_callback_and_nobody_else_learns_where_it_goes(
    database_url: str, mrtr_memory: Mrtr, receiver: ServerProcess, inbox: Kept
) -> None:
    """The callback URL may carry the agent's own secret: a teammate, an auditor or another team cannot
    set one on dev's run, and those who see dev's call (its approver, an auditor) never see the URL; nor
    can they replace the secret dev's callbacks are signed with."""
    async with running_console(
        database_url, {"mrtr": mrtr_memory.spec}, notifier=False, allow_private_server_urls=True
    ) as console:
        secret = await new_webhook_secret(console)
        run_id = await console.new_run()
        theirs = {
            "server": "mrtr",
            "method": "tools/call",
            "params": {"name": "complete_now", "arguments": {"x": "a"}},
            "callback_url": f"{receiver.url}/theirs",
        }
        for who, status in (("lead", 403), ("viewer", 403), ("outsider", 404)):
            tried = await console.client.post(
                f"/api/v1/runs/{run_id}/calls", json=theirs, headers=console.auth(who)
            )
            assert tried.status_code == status, (who, tried.text)
        async with transaction(console.runtime.factory) as session:
            assert (await session.execute(select(Call).where(Call.run_id == run_id))).scalars().all() == []

        hook = f"{receiver.url}/agent?key=s3cret-of-the-agent"
        call = await console.call("mrtr", "two_rounds", {"topic": "alpha"}, run_id=run_id, callback_url=hook)
        for who in ("lead", "viewer"):
            seen = await console.client.get(f"/api/v1/calls/{call['id']}", headers=console.auth(who))
            assert seen.status_code == 202, seen.text  # the call, still waiting
            assert "s3cret" not in seen.text and "callback" not in seen.text  # noqa: PT018
        async with signed_in(console, "dev") as dev:
            [mine] = html(await dev.client.get("/tokens")).select('form[action$="/webhook-secret"]')
        for who in ("viewer", "outsider"):
            async with signed_in(console, who) as them:
                run_page = await them.client.get(f"/runs/{run_id}")
                assert "s3cret" not in run_page.text
                replaced = await them.client.post(str(mine["action"]), data={"csrf_token": them.csrf})
                assert replaced.status_code == 404, replaced.text
        async with signed_in(console, "viewer") as auditor:
            exported = await auditor.client.get("/audit/export", params={"format": "jsonl"})
            assert exported.status_code == 200
            assert "s3cret" not in exported.text

        assert await send_due(console) == 1
        [sent] = posts(inbox)
        assert sent["path"] == "/agent?key=s3cret-of-the-agent"
        assert Webhook(secret).verify(sent["body"], sent["headers"])["type"] == "call.input_required"
