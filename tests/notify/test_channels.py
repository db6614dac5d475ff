"""A team's chat and webhook channels, delivered to a real HTTP receiver process (tests/servers/http_sink.py):
Slack Block Kit and Teams Adaptive Card payloads of the expected shape with the server's words escaped, a
webhook signed per Standard Webhooks (checked with the `standardwebhooks` library, and refused when one
byte changes), retries after the receiver failed, nothing of a link question, and the URL rules.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update
from standardwebhooks import Webhook, WebhookVerificationError

from console.calls.fanout import carriers_for
from console.db import utcnow
from console.errors import Forbidden, InvalidInput
from console.identity import authenticate_token, team_by_name
from console.identity.models import Membership, User
from console.mcp.sealed import Outbound
from console.notify.channels import add_channel
from console.notify.models import Channel, Delivery
from console.notify.sender import deliver_due
from console.transactions import transaction
from tests.harness import TEAM, Console, Mrtr, html, one, promote, running_console, signed_in, text
from tests.notify.kept import Kept
from tests.notify.receivers import add, sink
from tests.processes import ServerProcess

pytestmark = pytest.mark.anyio

HOSTILE = "<script>x</script> <!channel> [click](https://evil.example) *bold*"


def requests(inbox: Kept) -> dict[str, list[dict[str, Any]]]:
    """The requests the receiver accepted since the test began, by path."""
    found: dict[str, list[dict[str, Any]]] = {}
    for path in inbox.paths():
        kept = json.loads(path.read_text())
        found.setdefault(kept["path"], []).append(kept)
    return found


async def send_due(console: Console, when: timedelta = timedelta(0)) -> int:
    settings = console.runtime.settings
    carriers = carriers_for(settings)
    return await deliver_due(factory=console.runtime.factory, carriers=carriers, now=utcnow() + when)


def texts(node: Any) -> list[str]:
    """Every "text" string anywhere in a payload."""
    if isinstance(node, dict):
        return [v for k, v in node.items() if k == "text" and isinstance(v, str)] + [
            t for v in node.values() for t in texts(v)
        ]
    if isinstance(node, list):
        return [t for v in node for t in texts(v)]
    return []


async def test_slack_teams_and_a_signed_webhook_get_the_new_question_with_the_servers_words_inert(
    database_url: str, mrtr_memory: Mrtr, receiver: ServerProcess, inbox: Kept
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}, notifier=False) as console:
        await add(console, "slack", f"{receiver.url}/slack")
        await add(console, "teams", f"{receiver.url}/teams")
        secret = await add(console, "webhook", f"{receiver.url}/hook")
        assert secret is not None and secret.startswith("whsec_")  # noqa: PT018
        call = await console.call("mrtr", "hostile", {"payload": HOSTILE})
        [question] = call["pending"]
        link = f"http://console.test/elicitations/{question['id']}"
        assert await send_due(console) == 3
        got = requests(inbox)

        [slack] = got["/slack"]
        message = json.loads(slack["body"])
        assert [b["type"] for b in message["blocks"]] == ["section", "section", "context", "actions"]
        assert message["text"] == "mrtr: a question for dev's call to hostile"
        assert message["blocks"][3]["elements"][0]["url"] == link
        said = message["blocks"][1]["text"]["text"]
        assert said == (
            "&gt; Hostile: &lt;script&gt;x&lt;/script&gt; &lt;!channel&gt; "
            "[click](https://evil.example) *bold*"
        )
        assert not any("<" in t for t in texts(message))  # no Slack link or mention can be formed

        [teams] = got["/teams"]
        card = json.loads(teams["body"])["attachments"][0]
        assert card["contentType"] == "application/vnd.microsoft.card.adaptive"
        content = card["content"]
        assert (content["type"], content["version"]) == ("AdaptiveCard", "1.4")
        assert content["actions"] == [{"type": "Action.OpenUrl", "title": "Open the question", "url": link}]
        assert content["body"][1]["text"] == (
            "Hostile: \\<script\\>x\\</script\\> \\<\\!channel\\> "
            "\\[click\\]\\(https://evil.example\\) \\*bold\\*"
        )

        [hook] = got["/hook"]
        headers = {k.lower(): v for k, v in hook["headers"].items()}
        event = Webhook(secret).verify(hook["body"], headers)
        assert event["type"] == "question.created"
        assert event["version"] == 1
        assert event["data"]["question"]["id"] == question["id"]
        assert event["data"]["question"]["message"] == f"Hostile: {HOSTILE}"
        assert event["data"]["question"]["page"] == link
        assert event["data"]["call"] == {"server": "mrtr", "tool": "hostile", "owner": "dev"}
        tampered = hook["body"].replace('"version": 1', '"version": 2')
        with pytest.raises(WebhookVerificationError):
            Webhook(secret).verify(tampered, headers)
        with pytest.raises(WebhookVerificationError):
            Webhook("whsec_" + "A" * 44).verify(hook["body"], headers)


async def test_a_link_question_never_reaches_a_team_channel(
    database_url: str, mrtr_memory: Mrtr, receiver: ServerProcess, inbox: Kept
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}, notifier=False) as console:
        await add(console, "slack", f"{receiver.url}/slack")
        call = await console.call("mrtr", "form_and_url", {"message": "Connect your account"})
        questions = {q["key"]: q["id"] for q in call["pending"]}
        assert await send_due(console) == 1
        [slack] = requests(inbox)["/slack"]
        assert questions["approve"] in slack["body"]
        assert questions["connect"] not in slack["body"]
        assert "connect.example.com" not in slack["body"]


async def test_a_receiver_that_fails_gets_the_same_message_again_later(
    database_url: str, mrtr_memory: Mrtr, tmp_path: Path
) -> None:
    inbox = Kept(tmp_path / "received")  # a receiver of its own: it fails the first request
    with sink(tmp_path, inbox.folder, HTTP_SINK_FAIL_FIRST="1") as failing:
        async with running_console(database_url, {"mrtr": mrtr_memory.spec}, notifier=False) as console:
            secret = await add(console, "webhook", f"{failing.url}/hook")
            assert secret is not None
            await console.call("mrtr", "two_rounds", {"topic": "alpha"})
            assert await send_due(console) == 0
            async with transaction(console.runtime.factory) as session:
                [delivery] = (await session.execute(select(Delivery))).scalars().all()
            assert (delivery.status, delivery.attempts) == ("pending", 1)
            assert delivery.last_error == f"{failing.url.removeprefix('http://')} answered HTTP 503"
            assert await send_due(console, timedelta(seconds=10)) == 0  # not due yet
            assert await send_due(console, timedelta(seconds=31)) == 1
            [hook] = requests(inbox)["/hook"]
            headers = {k.lower(): v for k, v in hook["headers"].items()}
            assert headers["webhook-id"] == delivery.id  # the same message, as the receiver deduplicates
            Webhook(secret).verify(hook["body"], headers)


async def test_a_channel_url_must_be_https_on_a_public_address_unless_a_site_admin_says_internal(
    database_url: str,
) -> None:
    async with running_console(database_url, {}, notifier=False) as console:
        await promote(console, "lead", role="admin")
        async with transaction(console.runtime.factory) as session:
            admin = (await authenticate_token(session=session, token=console.tokens["lead"])).viewer
            cipher = Outbound.of(console.runtime.settings).cipher

            async def refused(url: str, **kw: Any) -> dict[str, str]:
                with pytest.raises(InvalidInput) as caught:
                    await add_channel(
                        session=session, cipher=cipher, by=admin, team_name=TEAM, kind="slack", url=url, **kw
                    )
                return caught.value.fields

            async def forbidden(url: str, **kw: Any) -> str:
                with pytest.raises(Forbidden) as caught:
                    await add_channel(
                        session=session, cipher=cipher, by=admin, team_name=TEAM, kind="slack", url=url, **kw
                    )
                return caught.value.message

            # Only a site admin (or an operator) may point a channel at this machine or its network.
            assert await forbidden("http://hooks.example.com/x", internal=True) == (
                "only a site admin can add an internal channel (on a private address)"
            )
            assert "loopback" in await forbidden("https://127.0.0.1/hook")
            assert await refused("http://hooks.example.com/x") == {
                "url": "an https URL (plain http only on an internal address)"
            }
            assert await refused("ftp://hooks.example.com/x") == {"url": "an https URL"}
            assert await refused("https://93.184.216.34/x", events=["question.created"]) == {
                "events": "only for a webhook"
            }


async def test_a_team_admin_adds_and_removes_channels_on_the_page_and_a_member_cannot(
    database_url: str,
) -> None:
    async with running_console(database_url, {}, notifier=False) as console:
        await promote(console, "lead", role="admin")
        page = f"/admin/teams/{TEAM}/notifications"
        async with signed_in(console, "lead") as admin:
            added = await admin.client.post(
                f"/admin/teams/{TEAM}/channels",
                data={
                    "csrf_token": admin.csrf,
                    "kind": "webhook",
                    "url": "https://93.184.216.34/hook",
                    "events": ["question.created", "call.failed"],
                },
            )
            assert added.status_code == 200, added.text
            secret = text(one(html(added), "#channel-secret"))
            assert secret.startswith("whsec_")
            again = await admin.client.get(page)
            assert secret not in again.text  # shown once
            [row] = html(again).select("#channel-list tbody tr")
            assert [text(td) for td in row.select("td")[:3]] == [
                "webhook",
                "93.184.216.34",
                "question.created call.failed",
            ]

            refused = await admin.client.post(
                f"/admin/teams/{TEAM}/channels",
                data={"csrf_token": admin.csrf, "kind": "slack", "url": "https://10.0.0.5/hook"},
            )
            assert refused.status_code == 403, refused.text
            assert "private" in text(one(html(refused), "main h1 + p"))
            assert not html(again).select("#channel-internal")  # offered to site admins only

            async with signed_in(console, "dev") as member:
                assert (await member.client.get(page)).status_code == 403
                tried = await member.client.post(
                    f"/admin/teams/{TEAM}/channels",
                    data={"csrf_token": member.csrf, "kind": "slack", "url": "https://93.184.216.36/x"},
                )
                assert tried.status_code == 403
                removal = str(one(row, "form").get("action"))
                assert (
                    await member.client.post(removal, data={"csrf_token": member.csrf})
                ).status_code == 403

            removed = await admin.client.post(
                str(one(row, "form").get("action")), data={"csrf_token": admin.csrf}
            )
            assert removed.status_code == 303, removed.text
            assert not html(await admin.client.get(page)).select("#channel-list")
        actions = [p["kind"] for p in await console.audit_payloads("channel_added")]
        assert actions == ["webhook"]
        assert [p["kind"] for p in await console.audit_payloads("channel_removed")] == ["webhook"]


async def test_another_teams_channel_hears_nothing_of_this_teams_questions(
    database_url: str, mrtr_memory: Mrtr, receiver: ServerProcess, inbox: Kept
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}, notifier=False) as console:
        await add(console, "slack", f"{receiver.url}/platform")
        await add(console, "webhook", f"{receiver.url}/elsewhere", team="elsewhere")
        await console.call("mrtr", "two_rounds", {"topic": "alpha"})
        assert await send_due(console) == 1
        assert list(requests(inbox)) == ["/platform"]


async def run_elsewhere(console: Console, name: str) -> None:
    """Make `name` the admin of the other team, "elsewhere"."""
    async with transaction(console.runtime.factory) as session:
        user = (await session.execute(select(User).where(User.name == name))).scalar_one()
        team = await team_by_name(session=session, name="elsewhere")
        await session.execute(
            update(Membership)
            .where(Membership.user_id == user.id, Membership.team_id == team.id)
            .values(role="admin")
        )
        await session.commit()


@pytest.mark.parametrize("who", ["lead", "viewer", "outsider"])
async def test_a_teams_notifications_are_its_admins_alone_not_an_approvers_an_auditors_or_another_teams(
    database_url: str, mrtr_memory: Mrtr, tmp_path: Path, who: str
) -> None:
    """Its channels and deliveries, seen, added, removed or sent again: 403 to the team's approver and
    auditor and to another team's admin, who through their own team's pages reaches none of them (404)."""
    with sink(tmp_path, tmp_path / "received", HTTP_SINK_FAIL_FIRST="100") as failing:
        async with running_console(database_url, {"mrtr": mrtr_memory.spec}, notifier=False) as console:
            await run_elsewhere(console, "outsider")
            await add(console, "webhook", f"{failing.url}/hook")
            await console.call("mrtr", "two_rounds", {"topic": "alpha"})
            await send_due(console)
            await send_due(console, timedelta(hours=25))  # past its time to give up: failed
            async with transaction(console.runtime.factory) as session:
                [delivery] = (await session.execute(select(Delivery))).scalars().all()
                [channel] = (await session.execute(select(Channel))).scalars().all()
            assert delivery.status == "failed"
            ours = f"/admin/teams/{TEAM}"
            async with signed_in(console, who) as person:
                assert (await person.client.get(f"{ours}/notifications")).status_code == 403
                tries = {
                    f"{ours}/channels": {"kind": "slack", "url": "https://93.184.216.36/x"},
                    f"{ours}/channels/{channel.id}/remove": {},
                    f"{ours}/notifications/{delivery.id}/resend": {},
                }
                for url, data in tries.items():
                    tried = await person.client.post(url, data={**data, "csrf_token": person.csrf})
                    assert tried.status_code == 403, url
                if who == "outsider":  # an admin, of the other team: this team's ids are unknown there
                    theirs = "/admin/teams/elsewhere"
                    page = await person.client.get(f"{theirs}/notifications")
                    assert page.status_code == 200, page.text
                    assert delivery.id not in page.text and channel.id not in page.text  # noqa: PT018
                    for url in (
                        f"{theirs}/channels/{channel.id}/remove",
                        f"{theirs}/notifications/{delivery.id}/resend",
                    ):
                        tried = await person.client.post(url, data={"csrf_token": person.csrf})
                        assert tried.status_code == 404, url
            async with transaction(console.runtime.factory) as session:
                kept = await session.get(Delivery, delivery.id)
                assert kept is not None
                assert kept.status == "failed"
                assert len((await session.execute(select(Channel))).scalars().all()) == 1
            assert len(await console.audit_payloads("channel_added")) == 1  # the operator's
            for action in ("channel_removed", "notification_resent"):
                assert await console.audit_payloads(action) == [], action
