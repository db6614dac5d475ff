"""The Decided view: past questions with their outcome, who answered and co-signed and when, shown only to
people who may see the question's run, and never with another person's link."""

from __future__ import annotations

from datetime import timedelta

import pytest
from bs4 import BeautifulSoup, Tag

from console.calls.models import Elicitation
from console.db import new_id
from tests.harness import Browser, Mrtr, html, one, running_console, signed_in, text
from tests.policies.setup import set_policy

pytestmark = pytest.mark.anyio

HTMX = {"HX-Request": "true"}
LINK = "https://connect.example.com/start?flow=abc"  # what the test server's form_and_url asks dev to open


async def decided_page(who: Browser, **params: str) -> BeautifulSoup:
    response = await who.client.get("/decided", params=params or None)
    assert response.status_code == 200, (response.status_code, response.text[:500])
    return html(response)


def decided_ids(soup: BeautifulSoup) -> list[str]:
    return [str(row["id"]).removeprefix("decided-") for row in soup.select("#decided-list tr.decided-row")]


def row(soup: BeautifulSoup, elicitation_id: str) -> Tag:
    return one(soup, f"#decided-{elicitation_id}")


async def test_decided_shows_the_outcome_who_answered_every_co_signer_and_when(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        declined = await console.call("mrtr", "two_rounds", {"topic": "no"})
        assert (await console.answer(declined["pending"][0]["id"], "decline")).status_code == 200
        await set_policy(console, required_approvals=2)
        quorum = await console.call("mrtr", "two_rounds", {"topic": "quorum"})
        question = quorum["pending"][0]["id"]
        assert (await console.answer(question, "accept", {"name": "Ada"}, who="lead")).status_code == 200
        waiting = await console.call("mrtr", "two_rounds", {"topic": "still open"})
        async with signed_in(console, "dev") as dev:
            soup = await decided_page(dev)
            assert question not in decided_ids(soup)  # one approval of two: still pending
            assert (await console.answer(question, "accept", {"name": "Ada"}, who="lead2")).status_code == 200
            soup = await decided_page(dev)
            assert decided_ids(soup) == [question, declined["pending"][0]["id"]]  # most recent first
            assert waiting["pending"][0]["id"] not in decided_ids(soup)
            assert one(soup, 'header nav a[href="/decided"]').get_text() == "Decided"

            accepted = row(soup, question)
            assert text(one(accepted, ".question-link")) == "About quorum: what is your name?"
            assert one(accepted, ".question-link")["href"] == f"/elicitations/{question}"
            assert text(one(accepted, ".status")) == "accepted"
            signatures = accepted.select(".signatures li")
            assert [text(li).removesuffix(text(one(li, "time"))) for li in signatures] == [
                "lead approved ",
                "lead2 approved ",
            ]
            assert [text(dt) for dt in accepted.select(".answer dt")] == ["name"]
            assert [text(dd) for dd in accepted.select(".answer dd")] == ["Ada"]
            decided_at = one(accepted, ".outcome > time")
            assert str(decided_at["datetime"]).endswith("Z")
            assert text(decided_at).endswith(" ago")
            assert one(accepted, f'a[href="/runs/{quorum["run_id"]}"]')

            no = row(soup, declined["pending"][0]["id"])
            assert text(one(no, ".status")) == "declined"
            assert text(one(no, ".decided-by")) == "by lead"
            assert no.select(".answer") == []

            only_declined = await decided_page(dev, outcome="declined")
            assert decided_ids(only_declined) == [declined["pending"][0]["id"]]
            assert one(only_declined, "#filter-outcome option[selected]")["value"] == "declined"
            assert (await dev.client.get("/decided", params={"outcome": "pending"})).status_code == 422

            fragment = await dev.client.get("/decided", headers=HTMX)
            assert fragment.status_code == 200
            assert "<html" not in fragment.text
            assert decided_ids(html(fragment)) == [question, declined["pending"][0]["id"]]


async def test_decided_shows_each_person_only_what_they_may_see_and_never_anothers_link(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        mixed = await console.call("mrtr", "form_and_url", {})
        by_key = {p["key"]: p["id"] for p in mixed["pending"]}
        assert (await console.answer(by_key["connect"], "decline", who="dev")).status_code == 200
        assert (
            await console.answer(by_key["approve"], "accept", {"ok": True}, who="lead")
        ).status_code == 200
        theirs = await console.call("mrtr", "two_rounds", {"topic": "lead2's own"}, who="lead2")
        assert (await console.answer(theirs["pending"][0]["id"], "cancel", who="lead2")).status_code == 200
        devs = {by_key["connect"], by_key["approve"]}
        everything = {*devs, theirs["pending"][0]["id"]}
        async with (
            signed_in(console, "dev") as dev,
            signed_in(console, "lead") as lead,
            signed_in(console, "viewer") as auditor,
            signed_in(console, "outsider") as outsider,
        ):
            member_view = await decided_page(dev)
            assert set(decided_ids(member_view)) == devs  # a member never sees a teammate's questions
            assert "lead2's own" not in text(one(member_view, "main"))
            assert set(decided_ids(await decided_page(lead))) == everything
            assert set(decided_ids(await decided_page(auditor))) == everything
            nobody = await decided_page(outsider)
            assert decided_ids(nobody) == []
            assert "Nothing decided yet." in text(one(nobody, ".empty-state"))
            assert (
                await outsider.client.get("/decided", params={"before": by_key["approve"]})
            ).status_code == 404

            for teammate in (lead, auditor):
                page = await teammate.client.get("/decided")
                assert "connect.example.com" not in page.text  # not the link, its host, nor its query
                assert "flow=abc" not in page.text
                link_row = row(html(page), by_key["connect"])
                assert text(one(link_row, ".status")) == "declined"
                assert text(one(link_row, ".decided-by")) == "by dev"
                opened = await teammate.client.get(str(one(link_row, ".question-link")["href"]))
                assert opened.status_code == 200
                assert "connect.example.com" not in opened.text

            approve_row = row(await decided_page(lead), by_key["approve"])
            assert [text(dd) for dd in approve_row.select(".answer dd")] == ["yes"]  # a boolean, in words


async def test_decided_pages_most_recent_first_with_a_keyset(database_url: str, mrtr_memory: Mrtr) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        call = await console.call("mrtr", "two_rounds", {"topic": "many"})
        original_id = call["pending"][0]["id"]
        assert (await console.answer(original_id, "decline")).status_code == 200
        async with console.runtime.factory() as session:  # 54 more decisions, a second apart
            original = await session.get(Elicitation, original_id)
            assert original is not None
            assert original.decided_at is not None
            columns = {c.key: getattr(original, c.key) for c in Elicitation.__table__.columns}
            copies = [
                Elicitation(
                    **{**columns, "id": new_id(), "decided_at": original.decided_at - timedelta(seconds=n)}
                )
                for n in range(1, 55)
            ]
            session.add_all(copies)
            await session.commit()
        newest_first = [original_id, *(c.id for c in copies)]
        async with signed_in(console, "dev") as dev:
            first = await decided_page(dev)
            links = [a for a in first.select("#decided-list a") if text(a) == "Older decisions"]
            assert len(links) == 1
            second = html(await dev.client.get(str(links[0]["href"])))
            assert [a for a in second.select("#decided-list a") if text(a) == "Older decisions"] == []
            assert decided_ids(first) + decided_ids(second) == newest_first
            assert len(decided_ids(first)) == 50
