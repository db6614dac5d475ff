"""Pages people read at a glance: a server by its name (never its command line), when each call was made,
times as relative text with the exact moment in a <time> element, and the team's policy in words."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from bs4 import BeautifulSoup, Tag

from console.audit.signing import new_private_key_text
from tests.harness import MRTR_SERVER, Mrtr, html, one, promote, running_console, signed_in, text
from tests.policies.setup import set_policy

pytestmark = pytest.mark.anyio

RELATIVE = re.compile(r"^(\d+ (s|min|h|d) (ago|left)|expired)$")
MACHINE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
EXACT_TIME = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC$")
RAW_ISO = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}|\d{2}:\d{2}:\d{2}\.\d+")


def to_the_second(iso: str) -> str:
    """An API timestamp as a <time datetime> carries it: UTC, whole seconds, `Z`."""
    return datetime.fromisoformat(iso).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def shown_text(soup: BeautifulSoup | Tag) -> str:
    """The text a person reads on the page (attributes such as title left out)."""
    return text(one(soup, "main")) if isinstance(soup, BeautifulSoup) else text(soup)


async def test_inbox_and_question_page_name_a_stdio_server_and_say_when_each_call_was_made(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        calls = []
        for topic in ("first", "second"):  # two deploys with the same title
            run_id = await console.new_run("dev", "Deploy auth-service")
            calls.append(await console.call("mrtr", "two_rounds", {"topic": topic}, run_id=run_id))
        async with signed_in(console, "lead") as lead:
            inbox = html(await lead.client.get("/"))
            assert MRTR_SERVER not in inbox.decode()  # the command line is nowhere, not even in an attribute
            for call in calls:
                row = one(inbox, f"#question-{call['pending'][0]['id']}")
                assert text(one(row, 'td[data-label="Server"]')) == "mrtr tools/call two_rounds"
                called = one(row, ".called time")
                assert called["datetime"] == to_the_second(call["created_at"])
                assert RELATIVE.match(text(called))

            call = calls[1]
            page = await lead.client.get(f"/elicitations/{call['pending'][0]['id']}")
            assert page.status_code == 200
            soup = html(page)
            assert MRTR_SERVER not in page.text
            assert text(one(soup, ".asking")) == "Asked by the MCP server mrtr"
            called = one(soup, "#requested-by .called time")
            assert called["datetime"] == to_the_second(call["created_at"])
            assert EXACT_TIME.match(str(called["title"]))


def check_times(name: str, soup: BeautifulSoup) -> list[str]:
    """Every <time> says a relative time and carries the exact one; no raw ISO text is left to read."""
    problems = []
    times = soup.select("main time")
    if not times:
        problems.append(f"{name}: no <time> element")
    for tag in times:
        if not RELATIVE.match(text(tag)):
            problems.append(f"{name}: time text {text(tag)!r}")
        if not MACHINE_TIME.match(str(tag.get("datetime", ""))):
            problems.append(f"{name}: datetime {tag.get('datetime')!r}")
        if not EXACT_TIME.match(str(tag.get("title", ""))):
            problems.append(f"{name}: title {tag.get('title')!r}")
    raw = RAW_ISO.findall(shown_text(soup))
    if raw:
        problems.append(f"{name}: raw timestamps {raw}")
    return problems


async def test_every_time_on_the_pages_is_relative_with_the_exact_moment_in_a_time_element(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(
        database_url,
        {"mrtr": mrtr_memory.spec},
        audit_signing_key=new_private_key_text(),
        audit_checkpoint_every=2,
    ) as console:
        pending = await console.call("mrtr", "two_rounds", {"topic": "open"})
        answered = await console.call("mrtr", "two_rounds", {"topic": "closed"})
        assert (await console.answer(answered["pending"][0]["id"], "decline")).status_code == 200
        await console.settle(answered["id"])
        await promote(console, "lead", role="admin")
        async with signed_in(console, "lead") as lead:
            first_event = one(html(await lead.client.get("/audit")), "#audit-events tbody tr:last-child a")
            pages = {
                "inbox": "/",
                "decided": "/decided",
                "runs": "/runs",
                "run": f"/runs/{answered['run_id']}",
                "pending question": f"/elicitations/{pending['pending'][0]['id']}",
                "answered question": f"/elicitations/{answered['pending'][0]['id']}",
                "tokens": "/tokens",
                "team tokens": "/admin/teams/platform/tokens",
                "audit": "/audit",
                "audit event": str(first_event["href"]),
            }
            problems: list[str] = []
            for name, url in pages.items():
                response = await lead.client.get(url)
                assert response.status_code == 200, (url, response.text[:300])
                problems += check_times(name, html(response))
            assert problems == []
            chain = one(html(await lead.client.get("/audit")), "#chain-status")
            assert "signed checkpoint at seq" in text(chain)
            assert RELATIVE.match(text(one(chain, "#chain-signed time")))


async def test_the_team_page_says_each_policy_rule_in_the_question_pages_words(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        await set_policy(console, no_self_approval=True, required_approvals=2)
        await set_policy(
            console, "destructive", step_up_minutes=5, expiry_minutes=120, expiry_action="decline"
        )
        await set_policy(console, "tool", tool="deploy*", no_self_approval=False, required_approvals=1)
        await set_policy(console, "server", server="mrtr", expiry_action="cancel")
        await set_policy(
            console, "tool", tool="deploy*", condition='environment == "production"', required_approvals=2
        )
        await promote(console, "lead", role="admin")
        call = await console.call("mrtr", "two_rounds", {"topic": "policy"})
        async with signed_in(console, "lead") as lead:
            team = html(await lead.client.get("/admin/teams/platform"))
            rules = [" ".join(li.get_text().split()) for li in team.select("#policies li")]
            assert rules == [
                "Team default, always: The run's owner may not answer questions of their own runs "
                "(no self-approval). "
                "2 different people must approve the same answer.",
                "Destructive tools (stricter default), always: Unanswered after 2 hours, it is declined. "
                "Deciding needs a sign-in within the last 5 minutes.",
                "Server mrtr, always: When it expires unanswered, it is cancelled.",
                "Tool deploy* on any server, always: The run's owner may answer questions of their own runs "
                "(self-approval allowed). "
                "One approval is enough.",
                'Tool deploy* on any server, when environment == "production": '
                "2 different people must approve the same answer.",
            ]
            question = html(await lead.client.get(f"/elicitations/{call['pending'][0]['id']}"))
            words = [text(li) for li in one(question, "section.policy ul").select("li")]
            # The question page says who may answer in one sentence (a team page rule sets one part).
            for sentence in (
                "The team's approvers may answer, but not the run's owner",
                "2 different people",
            ):
                assert any(w.startswith(sentence) for w in words)
