"""The pages people use, driven like a browser without JavaScript against real MCP test servers: the inbox
(who sees what, order, filters, keyset pages, empty state), the question page and its form (validation,
decisions, races, unsupported schemas) and the run page."""

from __future__ import annotations

import json
import secrets
from typing import Any

import anyio
import pytest
from bs4 import BeautifulSoup, Tag
from sqlalchemy import select

from console.calls.models import Elicitation
from console.db import new_id, utcnow
from tests.harness import (
    Browser,
    Console,
    Mrtr,
    form_fields,
    html,
    one,
    result_text,
    running_console,
    signed_in,
    text,
)
from tests.policies.setup import add_person, set_policy

pytestmark = pytest.mark.anyio

HTMX = {"HX-Request": "true"}
EMPTY = "Nothing is waiting for you."


async def page(who: Browser, url: str, **kw: Any) -> BeautifulSoup:
    response = await who.client.get(url, **kw)
    assert response.status_code == 200, (url, response.status_code, response.text[:500])
    return html(response)


def inbox_ids(soup: BeautifulSoup) -> list[str]:
    """The question ids of the inbox rows, top to bottom."""
    return [str(row["id"]).removeprefix("question-") for row in soup.select("#question-list tr.question-row")]


def older_link(soup: BeautifulSoup) -> str | None:
    links = [a for a in soup.select("#question-list a") if text(a) == "Older questions"]
    assert len(links) <= 1
    return str(links[0]["href"]) if links else None


def control_for(form: Tag, label: str) -> Tag:
    """The input, select or fieldset a label (its text up to a required mark) belongs to."""
    for tag in form.select("label, legend"):
        if text(tag).removesuffix("* (required)").strip() != label:
            continue
        if tag.name == "legend":
            parent = tag.parent
            assert isinstance(parent, Tag)
            return parent
        return one(form, f"#{tag['for']}")
    raise AssertionError(f"no field labelled {label!r}")


def field_box(form: Tag, label: str) -> Tag:
    """The element that wraps one field (label, control, help and error)."""
    control = control_for(form, label)
    box = control if control.name == "fieldset" else control.find_parent(class_="field")
    assert isinstance(box, Tag)
    return box


async def ask(console: Console, tool: str = "two_rounds", **arguments: Any) -> dict[str, Any]:
    """Start a call as dev's agent and return it once it asks (its run id added as `run_id`)."""
    title = str(arguments.pop("title", "test run"))
    run_id = await console.new_run("dev", title)
    if tool == "two_rounds":
        arguments.setdefault("topic", secrets.token_hex(4))
    call = await console.call(str(arguments.pop("server", "mrtr")), tool, arguments, run_id=run_id)
    assert call["status"] == "awaiting_input", call
    call["run_id"] = run_id
    return call


async def second_round(console: Console, title: str = "deploy run") -> dict[str, Any]:
    """A two_rounds call whose first question lead answered "Ada": it now asks amount and count."""
    call = await ask(console, title=title)
    second = await console.answer_and_settle(call, "accept", {"name": "Ada"})
    assert second["status"] == "awaiting_input"
    second["run_id"] = call["run_id"]
    return second


# --- inbox --------------------------------------------------------------------------------


async def test_inbox_lists_only_what_each_person_may_answer(database_url: str, mrtr_memory: Mrtr) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        form_call = await ask(console)
        mixed = await ask(console, "form_and_url")
        form_q = form_call["pending"][0]["id"]
        by_key = {p["key"]: p["id"] for p in mixed["pending"]}
        async with (
            signed_in(console, "dev") as dev,
            signed_in(console, "lead") as lead,
            signed_in(console, "viewer") as viewer,
            signed_in(console, "outsider") as outsider,
        ):
            assert set(inbox_ids(await page(dev, "/"))) == {form_q, by_key["approve"], by_key["connect"]}
            assert set(inbox_ids(await page(lead, "/"))) == {form_q, by_key["approve"]}
            for nobody in (viewer, outsider):
                soup = await page(nobody, "/")
                assert inbox_ids(soup) == []
                assert EMPTY in text(one(soup, ".empty-state"))

            row = one(await page(lead, "/"), f"#question-{form_q}")
            assert one(row, "a.question-link")["href"] == f"/elicitations/{form_q}"
            assert text(one(row, "a.question-link")) == form_call["pending"][0]["message"]
            assert text(one(row, ".server-badge")) == "mrtr"
            assert "two_rounds" in text(row)
            assert text(one(row, "strong")) == "dev"
            assert "'s agent" in text(row)
            assert one(row, f'a[href="/runs/{form_call["run_id"]}"]')
            url_row = one(await page(dev, "/"), f"#question-{by_key['connect']}")
            assert "link" in text(one(url_row, ".status"))


async def test_inbox_shows_newest_first_and_answered_questions_leave_it(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        calls = [await ask(console, topic=f"topic-{n}") for n in range(3)]
        ids = [c["pending"][0]["id"] for c in calls]
        async with signed_in(console, "lead") as lead:
            soup = await page(lead, "/")
            assert inbox_ids(soup) == ids[::-1]
            messages = [text(a) for a in soup.select("#question-list a.question-link")]
            assert messages == [f"About topic-{n}: what is your name?" for n in (2, 1, 0)]

            assert (await console.answer(ids[1], "decline")).status_code == 200
            assert inbox_ids(await page(lead, "/")) == [ids[2], ids[0]]
            fragment = await lead.client.get("/inbox", headers=HTMX)
            assert fragment.status_code == 200
            assert "<html" not in fragment.text
            assert inbox_ids(html(fragment)) == [ids[2], ids[0]]


async def test_inbox_filters_by_team_server_and_mode(database_url: str, mrtr_memory: Mrtr) -> None:
    servers = {"mrtr": mrtr_memory.spec, "mrtr2": mrtr_memory.spec}
    async with running_console(database_url, servers) as console:
        on_first = (await ask(console))["pending"][0]["id"]
        on_second = (await ask(console, server="mrtr2"))["pending"][0]["id"]
        mixed = {p["key"]: p["id"] for p in (await ask(console, "form_and_url"))["pending"]}
        everything = {on_first, on_second, mixed["approve"], mixed["connect"]}
        async with signed_in(console, "dev") as dev:
            soup = await page(dev, "/")
            assert set(inbox_ids(soup)) == everything
            teams = {text(o): str(o["value"]) for o in soup.select("#filter-team option")}
            assert teams == {"All teams": "", "platform": teams["platform"]}

            async def shown(*, check: bool = True, **filters: str) -> set[str]:
                soup = await page(dev, "/", params=filters)
                for name, value in filters.items() if check else ():  # the form shows what is applied
                    control = one(soup, f'form.filters [name="{name}"]')
                    chosen = control.select_one("option[selected]") if control.name == "select" else control
                    assert chosen is not None, name
                    assert chosen["value"] == value, name
                return set(inbox_ids(soup))

            assert await shown(server="mrtr2") == {on_second}
            assert await shown(server="mrtr") == {on_first, mixed["approve"], mixed["connect"]}
            assert await shown(server="nope") == set()
            assert await shown(mode="url") == {mixed["connect"]}
            assert await shown(mode="form") == {on_first, on_second, mixed["approve"]}
            assert await shown(team=teams["platform"]) == everything
            assert await shown(team=teams["platform"], server="mrtr", mode="form") == {
                on_first,
                mixed["approve"],
            }
            assert await shown(team=new_id(), check=False) == set()
            bad = await dev.client.get("/", params={"mode": "everything"})
            assert bad.status_code == 422


async def test_inbox_pages_with_a_keyset_through_many_questions(database_url: str, mrtr_memory: Mrtr) -> None:
    total = 120
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        # Against a hang, not a speed check: alone these take 6 s; beside the chaos test on two cores, a
        # CI run needed more than 60.
        with anyio.fail_after(240):
            for n in range(total):
                await ask(console, topic=f"bulk-{n}")
        async with console.runtime.factory() as session:
            rows = await session.execute(
                select(Elicitation.id).order_by(Elicitation.created_at.desc(), Elicitation.id.desc())
            )
            newest_first = list(rows.scalars())
        assert len(newest_first) == total

        async with signed_in(console, "lead") as lead:
            first = await page(lead, "/")
            pages = [inbox_ids(first)]
            link = older_link(first)
            assert len(pages[0]) == 50
            assert link is not None
            assert "before=" in link
            assert "offset" not in link
            assert "page=" not in link
            # A question arriving meanwhile neither shifts nor repeats the older pages.
            newcomer = (await ask(console, topic="newcomer"))["pending"][0]["id"]
            for _ in range(total // 50 + 1):  # bounded: links that go round in circles must not hang
                if link is None:
                    break
                soup = await page(lead, link)
                pages.append(inbox_ids(soup))
                link = older_link(soup)
            assert link is None, "the older-pages links do not end"
            assert [len(p) for p in pages] == [50, 50, 20]
            assert [i for p in pages for i in p] == newest_first
            assert inbox_ids(await page(lead, "/"))[0] == newcomer

            # Filters ride along on the next-page link.
            filtered = await page(lead, "/", params={"mode": "form", "server": "mrtr"})
            link = older_link(filtered)
            assert link is not None
            assert "mode=form" in link
            assert "server=mrtr" in link
            assert inbox_ids(await page(lead, link)) == ([newcomer, *newest_first])[50:100]


# --- the question page --------------------------------------------------------------------


async def test_question_page_shows_who_asks_what_for_whom_and_the_right_form(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        call = await ask(console, title="Release 2.4.1", topic="quarterly <budget>")
        second = await console.answer_and_settle(call, "accept", {"name": "Ada"})
        question_id = second["pending"][0]["id"]
        async with signed_in(console, "lead") as lead:
            soup = await page(lead, f"/elicitations/{question_id}")
            assert text(one(soup, ".asking .server-badge")) == "mrtr"
            assert text(one(soup, "h1")) == "Thanks Ada. How much and how many for quarterly <budget>?"
            facts = one(soup, "#requested-by")
            assert "dev" in text(one(facts, "strong"))
            run_link = one(facts, f'a[href="/runs/{call["run_id"]}"]')
            assert text(run_link) == "Release 2.4.1"
            assert "two_rounds" in text(facts)
            rows = [text(row) for row in soup.select("#call-arguments tbody tr")]
            assert rows == ["topic quarterly <budget>"]  # a table, not the request's JSON
            assert not soup.select("pre.json")

            form = one(soup, "form#decision-form")
            assert form["method"] == "post"
            assert form["action"] == f"/elicitations/{question_id}"
            hidden = form_fields(form)
            assert set(hidden) == {"csrf_token", "digest"}
            assert hidden["csrf_token"] == lead.csrf
            amount, count = control_for(form, "Amount"), control_for(form, "Count")
            assert (amount.name, amount["type"], amount["min"], amount["max"]) == (
                "input",
                "number",
                "0",
                "100",
            )
            assert amount.has_attr("required")
            assert (count.name, count["type"], count["step"]) == ("input", "number", "1")
            assert count.has_attr("required")
            assert amount["name"] != count["name"]
            buttons = [(b["name"], b["value"], text(b)) for b in form.select("button")]
            assert buttons == [
                ("action", "accept", "Accept"),
                ("action", "decline", "Decline"),
                ("action", "cancel", "Cancel"),
            ]


@pytest.mark.parametrize("htmx", [False, True], ids=["plain", "htmx"])
async def test_a_missing_required_answer_re_renders_the_form_with_the_message_next_to_the_field(
    database_url: str, mrtr_memory: Mrtr, htmx: bool
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        second = await second_round(console)
        question_id = second["pending"][0]["id"]
        async with signed_in(console, "lead") as lead:
            form = one(await page(lead, f"/elicitations/{question_id}"), "form#decision-form")
            amount, count = control_for(form, "Amount")["name"], control_for(form, "Count")["name"]
            data = {**form_fields(form), "action": "accept", str(amount): "", str(count): "7"}
            response = await lead.client.post(
                f"/elicitations/{question_id}", data=data, headers=HTMX if htmx else {}
            )
            assert response.status_code == 422
            soup = html(response)
            if htmx:
                assert soup.find("html") is None
                assert soup.find("body") is None
                roots = [t for t in soup.contents if isinstance(t, Tag)]
                assert [(t.name, t.get("id")) for t in roots] == [("div", "question-state")]
                assert [f.get("id") for f in roots[0].find_all("form")] == ["decision-form"]
            else:
                assert soup.find("html") is not None
                assert text(one(soup, "h1")).startswith("Thanks Ada.")
            form = one(soup, "form#decision-form")
            errors = form.select(".field-error")
            assert len(errors) == 2  # the summary at the top and the one next to Amount
            assert one(form, "p[role=alert].field-error")
            amount_box = field_box(form, "Amount")
            error = one(amount_box, ".field-error")
            amount_input = control_for(form, "Amount")
            assert amount_input["aria-invalid"] == "true"
            assert str(error["id"]) in str(amount_input["aria-describedby"]).split()
            assert field_box(form, "Count").select(".field-error") == []
            assert control_for(form, "Count")["value"] == "7"  # what was typed is kept
            assert form_fields(form)["csrf_token"] == lead.csrf
        assert (await console.question(question_id))["status"] == "pending"


async def test_a_valid_answer_redirects_to_the_question_which_then_shows_the_outcome(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        second = await second_round(console)
        question_id = second["pending"][0]["id"]
        async with signed_in(console, "lead") as lead:
            form = one(await page(lead, f"/elicitations/{question_id}"), "form#decision-form")
            data = {
                **form_fields(form),
                "action": "accept",
                str(control_for(form, "Amount")["name"]): "12.5",
                str(control_for(form, "Count")["name"]): "3",
            }
            response = await lead.client.post(f"/elicitations/{question_id}", data=data)
            assert response.status_code == 303
            assert response.headers["location"] == f"/elicitations/{question_id}"
            done = await console.settle(second["id"], after_round=second["round"])
            assert result_text(done) == "Ada 12.5 3"

            soup = await page(lead, response.headers["location"])
            assert soup.select("form#decision-form") == []
            outcome = one(soup, "#outcome")
            assert [text(s) for s in outcome.select(".status")] == ["accepted", "completed"]
            assert "by lead" in text(outcome)
            answer = {text(one(row, "th")): text(one(row, "td")) for row in outcome.select("tbody tr")}
            assert answer == {"amount": "12.5", "count": "3"}
            assert [t.get_text() for t in outcome.select("pre.result")] == ["Ada 12.5 3"]
            assert not one(soup, "#question-state").has_attr("hx-get")  # the call finished: no more polling
            assert one(outcome, f'a[href="/runs/{second["run_id"]}"]')
        question = await console.question(question_id)
        assert (question["status"], question["content"], question["decided_by"]) == (
            "accepted",
            {"amount": 12.5, "count": 3},
            "lead",
        )


async def test_the_second_person_to_answer_is_told_who_answered(database_url: str, mrtr_memory: Mrtr) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        call = await ask(console)
        question_id = call["pending"][0]["id"]
        url = f"/elicitations/{question_id}"
        async with signed_in(console, "lead") as lead, signed_in(console, "lead2") as lead2:
            forms = [one(await page(who, url), "form#decision-form") for who in (lead, lead2)]
            names = [str(control_for(f, "Name")["name"]) for f in forms]
            first = await lead.client.post(
                url, data={**form_fields(forms[0]), "action": "accept", names[0]: "Ada"}
            )
            assert first.status_code == 303
            for extra in ({}, HTMX):
                late = await lead2.client.post(
                    url, data={**form_fields(forms[1]), "action": "decline", names[1]: "Bob"}, headers=extra
                )
                assert late.status_code == 409
                warning = one(html(late), ".warning[role=alert]")
                assert text(warning) == "Someone was quicker: lead already answered (accepted)."
        question = await console.question(question_id)
        assert (question["status"], question["content"], question["decided_by"]) == (
            "accepted",
            {"name": "Ada"},
            "lead",
        )


async def test_run_page_shows_the_calls_rounds_answers_and_final_text(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        call = await ask(console, title="Budget run", topic="budget")
        second = await console.answer_and_settle(call, "accept", {"name": "Ada"}, who="lead")
        done = await console.answer_and_settle(second, "accept", {"amount": 5, "count": 2}, who="lead2")
        assert result_text(done) == "Ada 5 2"
        async with signed_in(console, "dev") as dev:
            soup = await page(dev, f"/runs/{call['run_id']}")
            assert text(one(soup, "h1")) == "Budget run"
            assert "dev" in text(one(soup, "dl.facts"))
            entry = one(soup, f"#call-{call['id']}")
            heading = text(one(entry, "h2"))
            assert "tools/call" in heading
            assert "two_rounds" in heading
            assert "mrtr" in heading
            assert text(one(entry, "p .status")) == "completed"
            assert json.loads(one(entry, "pre.json").get_text())["arguments"] == {"topic": "budget"}
            rounds = entry.select("ol.rounds > li")
            assert [text(one(r, "strong")) for r in rounds] == ["Round 1", "Round 2"]
            answers = [
                (str(one(li, "a")["href"]), text(one(li, ".status")), text(li).split(" by ")[1].split()[0])
                for r in rounds
                for li in r.select("ul > li")
            ]
            assert answers == [
                (f"/elicitations/{call['pending'][0]['id']}", "accepted", "lead"),
                (f"/elicitations/{second['pending'][0]['id']}", "accepted", "lead2"),
            ]
            assert [t.get_text() for t in entry.select("pre.result")] == ["Ada 5 2"]


async def test_run_page_credits_the_first_answer_and_every_co_signer(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        await add_person(console, "lead3", "approver")
        await set_policy(console, required_approvals=3)
        call = await ask(console, title="Three keys")
        question_id = call["pending"][0]["id"]
        first = await console.answer(question_id, "accept", {"name": "Ada"}, who="lead2")
        assert first.status_code == 200, first.text
        for who in ("lead3", "lead"):
            signed = await console.answer(
                question_id, "accept", who=who, content_digest=first.json()["content_digest"]
            )
            assert signed.status_code == 200, signed.text
        assert (await console.question(question_id))["decided_by"] == "lead"
        async with signed_in(console, "dev") as dev:
            soup = await page(dev, f"/runs/{call['run_id']}")
            answered = one(soup, f'ol.rounds li:has(> a[href="/elicitations/{question_id}"])')
            assert text(one(answered, ".status")) == "accepted"
            signatures = [
                (text(one(li, ".signer")), text(one(li, ".signed")), text(one(li, ".muted")))
                for li in answered.select("ul.signatures > li")
            ]
            assert [(who, what) for who, what, _ in signatures] == [
                ("lead2", "answered"),
                ("lead3", "co-signed"),
                ("lead", "co-signed"),
            ]
            assert all(when.endswith(" ago") for _, _, when in signatures)


async def test_a_question_of_another_team_is_a_not_found_page(database_url: str, mrtr_memory: Mrtr) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        call = await ask(console)
        question_id = call["pending"][0]["id"]
        async with signed_in(console, "outsider") as outsider:
            for url in (
                f"/elicitations/{question_id}",
                f"/runs/{call['run_id']}",
                "/elicitations/" + new_id(),
            ):
                response = await outsider.client.get(url)
                assert response.status_code == 404, url
                soup = html(response)
                assert text(one(soup, "h1")) == "Not found"
                assert "Name" not in text(one(soup, "main"))
                assert soup.select("form#decision-form") == []
            post = await outsider.client.post(
                f"/elicitations/{question_id}",
                data={"csrf_token": outsider.csrf, "action": "decline", "digest": ""},
            )
            assert post.status_code == 404
        assert (await console.question(question_id))["status"] == "pending"


NESTED = {
    "type": "object",
    "properties": {"address": {"type": "object", "properties": {"city": {"type": "string"}}}},
}


async def unsupported_question(console: Console) -> str:
    """A pending question whose schema is outside the form subset: a copy of a real one, made nested."""
    call = await ask(console)
    async with console.runtime.factory() as session:
        original = await session.get(Elicitation, call["pending"][0]["id"])
        assert original is not None
        columns = {c.key: getattr(original, c.key) for c in Elicitation.__table__.columns}
        copy = Elicitation(
            **{
                **columns,
                "id": new_id(),
                "key": "nested",
                "message": "Where do you live?",
                "schema_json": json.dumps(NESTED),
                "created_at": utcnow(),
            }
        )
        session.add(copy)
        await session.commit()
        return copy.id


async def test_an_unsupported_schema_offers_only_decline_and_cancel(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        question_id = await unsupported_question(console)
        url = f"/elicitations/{question_id}"
        async with signed_in(console, "lead") as lead:
            soup = await page(lead, url)
            assert text(one(soup, "h1")) == "Where do you live?"
            form = one(soup, "form#decision-form")
            assert "cannot show safely" in text(one(form, ".warning[role=alert]"))
            assert [b["value"] for b in form.select("button[name=action]")] == ["decline", "cancel"]
            assert [i["type"] for i in form.select("input")] == ["hidden", "hidden"]
            assert form.select("select, textarea") == []
            assert question_id in inbox_ids(await page(lead, "/"))

            declined = await lead.client.post(url, data={**form_fields(form), "action": "decline"})
            assert declined.status_code == 303
            assert declined.headers["location"] == url
            outcome = one(await page(lead, url), "#outcome")
            assert text(outcome.select(".status")[0]) == "declined"
        question = await console.question(question_id)
        assert (question["status"], question["decided_by"]) == ("declined", "lead")


async def test_accepting_an_unsupported_schema_is_refused_and_leaves_it_pending(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        question_id = await unsupported_question(console)
        url = f"/elicitations/{question_id}"
        async with signed_in(console, "lead") as lead:
            form = one(await page(lead, url), "form#decision-form")
            # A forged accept (the page offers no Accept button) gets a clear refusal, not a crash.
            refused = await lead.client.post(url, data={**form_fields(form), "action": "accept"})
            assert refused.status_code == 422, refused.text[:500]
            again = one(html(refused), "form#decision-form")
            assert [b["value"] for b in again.select("button[name=action]")] == ["decline", "cancel"]
        assert (await console.question(question_id))["status"] == "pending"
