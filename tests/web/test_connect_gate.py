"""The consent gate `/connect/{id}` for URL-mode questions, driven like a browser without JavaScript.

The MRTR test server's `form_and_url` tool asks a form question ("approve") and a URL question
("connect", https://connect.example.com/start?flow=abc) of dev's call. Links the test server cannot
send (a `javascript:` URL, a `user@host` trick, punycode) are pending URL questions inserted next to
the real one, copied from its row. Only dev (the call's owner) may see and open a link; everyone else
is refused with 403 and the attempt is audited.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import pytest
from bs4 import BeautifulSoup, Tag
from sqlalchemy import inspect, select

from console.audit.models import AuditEvent
from console.calls.models import Elicitation
from console.db import new_id, utcnow
from tests.harness import (
    Browser,
    Console,
    Mrtr,
    browser,
    form_fields,
    html,
    one,
    result_text,
    running_console,
    signed_in,
    submit_login,
    text,
    user_id,
)

pytestmark = pytest.mark.anyio

LINK = "https://connect.example.com/start?flow=abc"
CONNECT_MESSAGE = "Connect your example account"


def shown_url(soup: BeautifulSoup) -> str:
    """The address as the gate prints it (its highlighted part is a `mark` inside the `code`)."""
    return one(soup, ".url-text code").get_text()


def rel(tag: Tag) -> set[str]:
    return set(" ".join(tag.get_attribute_list("rel")).split())


async def get(who: Browser, path: str, status: int = 200) -> BeautifulSoup:
    response = await who.client.get(path)
    assert response.status_code == status, (path, response.status_code, response.text[:800])
    return html(response)


async def mixed_call(console: Console, **arguments: Any) -> dict[str, str]:
    """dev's agent calls form_and_url; the question ids by key, plus the call and run ids."""
    run_id = await console.new_run("dev", "connect run")
    call = await console.call("mrtr", "form_and_url", arguments, run_id=run_id)
    assert call["status"] == "awaiting_input", call
    ids = {p["key"]: p["id"] for p in call["pending"]}
    return {**ids, "call": call["id"], "run": run_id}


async def url_question_like(console: Console, template_id: str, url: str) -> str:
    """A pending URL question in the same call and round as `template_id`, asking for `url`."""
    async with console.runtime.factory() as session:
        template = await session.get(Elicitation, template_id)
        assert template is not None
        assert (template.mode, template.status) == ("url", "pending")
        values = {a.key: getattr(template, a.key) for a in inspect(Elicitation).column_attrs}
        values.update(id=new_id(), key=f"link-{new_id()[:8]}", url=url, created_at=utcnow())
        session.add(Elicitation(**values))
        await session.commit()
        return str(values["id"])


async def status_of(console: Console, elicitation_id: str) -> str:
    status: str = (await console.question(elicitation_id, who="dev"))["status"]
    return status


async def refusals(console: Console, elicitation_id: str) -> list[tuple[str | None, dict[str, Any]]]:
    """The `access_refused` audit events of a question: (actor user id, payload), oldest first."""
    async with console.runtime.factory() as session:
        rows = (
            await session.execute(
                select(AuditEvent)
                .where(AuditEvent.action == "access_refused", AuditEvent.subject_id == elicitation_id)
                .order_by(AuditEvent.seq)
            )
        ).scalars()
        return [(row.actor_id, json.loads(row.payload_json)) for row in rows]


def open_form(soup: BeautifulSoup, elicitation_id: str) -> Tag:
    return one(soup, f'form[action="/connect/{elicitation_id}"]')


def buttons(soup: BeautifulSoup) -> list[str]:
    return [text(b) for b in soup.select("main button")]


def assert_only_internal_links(soup: BeautifulSoup, where: str) -> None:
    """Every link, form target and resource of the page stays inside the console."""
    targets = [str(a["href"]) for a in soup.select("[href]")]
    targets += [str(f.get("action", "")) for f in soup.select("form")]
    targets += [str(t["src"]) for t in soup.select("[src]")]
    targets += [str(t.get("hx-get") or t.get("hx-post")) for t in soup.select("[hx-get], [hx-post]")]
    for target in targets:
        inside = target.startswith("/") and not target.startswith("//") and "\\" not in target
        assert inside or target.startswith("#"), f"{where}: a link out of the console: {target!r}"
    assert soup.select('meta[http-equiv="refresh" i]') == [], f"{where}: a refresh"


# --- what the gate shows ------------------------------------------------------------------------


async def test_the_gate_shows_the_full_url_its_site_and_the_warnings(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        ids = await mixed_call(console)
        tricky = await url_question_like(
            console, ids["connect"], "https://bank.example@evil.example:8443/login"
        )
        puny = await url_question_like(console, ids["connect"], "https://xn--80ak6aa92e.com/login")
        async with signed_in(console, "dev") as dev:
            # The question page names the site and sends to the gate; it never shows or links the URL.
            question = await get(dev, f"/elicitations/{ids['connect']}")
            review = [a for a in question.select("a") if text(a) == "Review the link"]
            assert [a["href"] for a in review] == [f"/connect/{ids['connect']}"]
            assert "example.com" in text(one(question, "#decision-form"))
            assert LINK not in str(question)
            assert_only_internal_links(question, "question page")

            gate = await get(dev, f"/connect/{ids['connect']}")
            assert text(one(gate, "h1.question-message")) == CONNECT_MESSAGE
            assert text(one(gate, ".asking .server-badge")) == "mrtr"
            assert shown_url(gate) == LINK  # the full address, exactly
            assert text(one(gate, "mark.domain")) == "example.com"
            assert text(one(gate, "strong.domain")) == "example.com"
            assert gate.select(".link-review .warning") == []
            form = open_form(gate, ids["connect"])
            assert form["method"] == "post"
            assert form["target"] == "_blank"
            assert rel(form) >= {"noopener", "noreferrer"}
            assert form_fields(form) == {"csrf_token": dev.csrf, "digest": form_fields(form)["digest"]}
            assert [text(b) for b in form.select("button")] == ["Open example.com"]
            assert buttons(gate) == ["Open example.com", "Decline", "Cancel"]
            assert_only_internal_links(gate, "gate")  # the address is shown, never linked

            gate = await get(dev, f"/connect/{tricky}")
            assert shown_url(gate) == "https://bank.example@evil.example:8443/login"
            assert text(one(gate, "mark.domain")) == "evil.example"  # not bank.example
            warnings = [text(w) for w in gate.select(".link-review .warning")]
            assert len(warnings) == 2, warnings
            assert any("“@”" in w and "evil.example" in w for w in warnings), warnings
            assert any("8443" in w for w in warnings), warnings
            assert [text(b) for b in open_form(gate, tricky).select("button")] == ["Open evil.example"]

            gate = await get(dev, f"/connect/{puny}")
            assert shown_url(gate) == "https://xn--80ak6aa92e.com/login"
            assert text(one(gate, "mark.domain")) == "xn--80ak6aa92e.com"
            assert "аррӏе.com" in text(one(gate, ".link-review"))  # how it displays (Cyrillic letters)
            warnings = [text(w) for w in gate.select(".link-review .warning")]
            assert len(warnings) >= 2, warnings
            assert all(w.startswith("Warning:") for w in warnings)


async def test_a_refused_link_can_only_be_declined_or_cancelled(database_url: str, mrtr_memory: Mrtr) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        ids = await mixed_call(console)
        script = await url_question_like(console, ids["connect"], "javascript:alert(1)")
        data_link = await url_question_like(console, ids["connect"], "data:text/html,<b>hi</b>")
        async with signed_in(console, "dev") as dev:
            for bad, reason in ((script, "javascript:"), (data_link, "data:")):
                gate = await get(dev, f"/connect/{bad}")
                refusal = [text(w) for w in gate.select("main .warning")]
                assert any(
                    w.startswith("The console will not open this address:") and reason in w for w in refusal
                ), refusal
                assert gate.select("form[action^='/connect/']") == []
                assert gate.select("mark.domain") == [] or text(one(gate, "mark.domain")) == ""
                assert buttons(gate) == ["Decline", "Cancel"]
                assert_only_internal_links(gate, "refused gate")

                # Posting the consent anyway: 422, nothing recorded.
                forced = await dev.client.post(f"/connect/{bad}", data={"csrf_token": dev.csrf})
                assert forced.status_code == 422, forced.text
                assert "will not open this address" in text(html(forced))
                assert await status_of(console, bad) == "pending"

            # "Accept" on the question page does not get around the gate either.
            sneaky = await dev.client.post(
                f"/elicitations/{script}", data={"csrf_token": dev.csrf, "action": "accept"}
            )
            assert (sneaky.status_code, sneaky.headers.get("location")) == (303, f"/connect/{script}")
            assert await status_of(console, script) == "pending"

            # The gate's own Decline form works.
            form = one(await get(dev, f"/connect/{script}"), f'form[action="/elicitations/{script}"]')
            declined = await dev.client.post(
                f"/elicitations/{script}", data={**form_fields(form), "action": "decline"}
            )
            assert declined.status_code == 303, declined.text
            assert await status_of(console, script) == "declined"


# --- consent ------------------------------------------------------------------------------------


async def test_opening_the_link_records_accept_and_sends_the_browser_there(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        ids = await mixed_call(console)
        async with signed_in(console, "dev") as dev:
            # Accept on the question page before consent goes to the gate first.
            early = await dev.client.post(
                f"/elicitations/{ids['connect']}", data={"csrf_token": dev.csrf, "action": "accept"}
            )
            assert (early.status_code, early.headers.get("location")) == (303, f"/connect/{ids['connect']}")
            assert await status_of(console, ids["connect"]) == "pending"

            # Without the CSRF token: refused, nothing recorded.
            gate = await get(dev, f"/connect/{ids['connect']}")
            fields = form_fields(open_form(gate, ids["connect"]))
            forged = await dev.client.post(f"/connect/{ids['connect']}", data={"digest": fields["digest"]})
            assert forged.status_code == 403, forged.text
            assert await status_of(console, ids["connect"]) == "pending"

            opened = await dev.client.post(f"/connect/{ids['connect']}", data=fields)
            assert opened.status_code == 200, opened.text
            assert opened.headers["referrer-policy"] == "no-referrer"
            leaving = html(opened)
            refresh = one(leaving, 'meta[http-equiv="refresh"]')
            assert refresh["content"] == f"0;url={LINK}"
            onward = one(leaving, "main a")
            assert onward["href"] == LINK
            assert rel(onward) >= {"noopener", "noreferrer"}
            assert "example.com" in text(leaving)

            answered = await console.question(ids["connect"], who="dev")
            assert (answered["status"], answered["decided_by"]) == ("accepted", "dev")
            # A reload (or a second click) after consent may still go where dev agreed to go.
            again = await dev.client.post(f"/connect/{ids['connect']}", data=fields)
            assert again.status_code == 200, again.text
            assert one(html(again), 'meta[http-equiv="refresh"]')["content"] == f"0;url={LINK}"
            # The gate now says it was answered and has no Open button.
            after = await get(dev, f"/connect/{ids['connect']}")
            assert after.select("form[action^='/connect/']") == []
            assert "You answered this already" in text(after)

        # The form question is lead's to answer; then the call resumes with both answers.
        done = await console.answer(ids["approve"], "accept", {"ok": True}, who="lead")
        assert done.status_code == 200, done.text
        call = await console.settle(ids["call"], after_round=1)
        assert result_text(call) == "approve=accept ok=True connect=accept"


# --- the same-user rule -------------------------------------------------------------------------


async def test_only_the_owner_may_open_the_link(database_url: str, mrtr_memory: Mrtr) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        ids = await mixed_call(console)
        connect = ids["connect"]
        lead_id = await user_id(console, "lead")
        async with signed_in(console, "lead") as lead:
            refused = await lead.client.get(f"/connect/{connect}")
            assert refused.status_code == 403, refused.text
            assert "This link is for dev only" in text(html(refused))
            assert LINK not in refused.text
            assert "connect.example.com" not in refused.text

            posted = await lead.client.post(f"/connect/{connect}", data={"csrf_token": lead.csrf})
            assert posted.status_code == 403, posted.text
            assert LINK not in posted.text

            api = await console.answer(connect, "accept", who="lead")
            assert api.status_code == 403, api.text
            assert await status_of(console, connect) == "pending"

            # lead's question page: it waits for dev; the link is nowhere in it.
            page = await lead.client.get(f"/elicitations/{connect}")
            assert page.status_code == 200, page.text
            assert "This question waits for dev" in text(html(page))
            assert "connect.example.com" not in page.text
            assert_only_internal_links(html(page), "lead's question page")

        attempts = await refusals(console, connect)
        assert [(actor, p["attempt"]) for actor, p in attempts] == [
            (lead_id, "open_link:GET"),
            (lead_id, "open_link:POST"),
            (lead_id, "answer:accept"),
        ]
        assert all(p["mode"] == "url" for _, p in attempts)
        assert all("connect.example.com" not in json.dumps(p) for _, p in attempts)

        # The team's auditor may look at dev's run, but not at the link.
        async with signed_in(console, "viewer") as viewer:
            watched = await viewer.client.get(f"/connect/{connect}")
            assert watched.status_code == 403, watched.text
            assert "connect.example.com" not in watched.text
            page = await viewer.client.get(f"/elicitations/{connect}")
            assert "connect.example.com" not in page.text
        assert [p["attempt"] for _, p in await refusals(console, connect)][-1] == "open_link:GET"
        assert (await refusals(console, connect))[-1][0] == await user_id(console, "viewer")

        # An outsider (another team) does not even learn that the question exists.
        async with signed_in(console, "outsider") as outsider:
            await get(outsider, f"/connect/{connect}", status=404)
        # A form question has no gate.
        async with signed_in(console, "dev") as dev:
            await get(dev, f"/connect/{ids['approve']}", status=422)
            form_post = await dev.client.post(f"/connect/{ids['approve']}", data={"csrf_token": dev.csrf})
            assert form_post.status_code == 422, form_post.text
            assert await status_of(console, ids["approve"]) == "pending"
            await get(dev, f"/connect/{new_id()}", status=404)
        assert await status_of(console, connect) == "pending"


async def test_the_owner_can_open_a_re_asked_link_again_and_teammates_never_see_it(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    """After consent the server asks for the same link again; dev, who closed that tab, opens it again."""
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        ids = await mixed_call(console)
        reask = await url_question_like(console, ids["connect"], LINK)
        async with signed_in(console, "dev") as dev:
            fields = form_fields(open_form(await get(dev, f"/connect/{ids['connect']}"), ids["connect"]))
            assert (await dev.client.post(f"/connect/{ids['connect']}", data=fields)).status_code == 200

            waiting = await get(dev, f"/elicitations/{reask}")
            assert "Waiting for you to finish at example.com" in text(one(waiting, "#decision-form"))
            again = one(waiting, "form#reopen-form")
            assert (again["method"], again["action"], again["target"]) == (
                "post",
                f"/connect/{reask}",
                "_blank",
            )
            assert rel(again) >= {"noopener", "noreferrer"}
            assert [text(b) for b in again.select("button")] == ["Open the link again"]
            assert LINK not in waiting.decode()  # the address itself is only on the gate and the way out

            opened = await dev.client.post(f"/connect/{reask}", data=form_fields(again))
            assert opened.status_code == 200, opened.text
            assert opened.headers["referrer-policy"] == "no-referrer"
            leaving = html(opened)
            assert one(leaving, 'meta[http-equiv="refresh"]')["content"] == f"0;url={LINK}"
            onward = one(leaving, "main a")
            assert (onward["href"], rel(onward) >= {"noopener", "noreferrer"}) == (LINK, True)
            # Opening it again answers nothing: dev still finishes there first, then checks again.
            assert await status_of(console, reask) == "pending"
            still = await get(dev, f"/elicitations/{reask}")
            assert [text(b) for b in one(still, "#decision-form").select("button")] == [
                "Check again",
                "Cancel",
            ]

        async with console.runtime.factory() as session:
            reopened = (
                (await session.execute(select(AuditEvent).where(AuditEvent.action == "link_reopened")))
                .scalars()
                .all()
            )
        assert [(e.actor_id, e.subject_id) for e in reopened] == [(await user_id(console, "dev"), reask)]
        assert "connect.example.com" not in reopened[0].payload_json

        for teammate in ("lead", "viewer"):
            async with signed_in(console, teammate) as who:
                page = await get(who, f"/elicitations/{reask}")
                assert page.select("#reopen-form, form[action^='/connect/']") == []
                assert "Open the link again" not in text(page)
                assert "connect.example.com" not in page.decode()
                assert_only_internal_links(page, f"{teammate}'s page of the re-asked link")
                fragment = await who.client.get(
                    f"/elicitations/{reask}/state", headers={"HX-Request": "true"}
                )
                assert fragment.status_code == 404, fragment.text
                assert "connect.example.com" not in fragment.text
                refused = await who.client.post(f"/connect/{reask}", data={"csrf_token": who.csrf})
                assert refused.status_code == 403, refused.text
                assert LINK not in refused.text
        assert await status_of(console, reask) == "pending"


async def test_a_signed_out_visitor_signs_in_first_and_is_then_checked(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        ids = await mixed_call(console)
        path = f"/connect/{ids['connect']}"
        login = f"/login?next={quote(path, safe='')}"
        async with browser(console) as nobody:
            away = await nobody.client.get(path)
            assert (away.status_code, away.headers["location"]) == (303, login)
            assert "connect.example.com" not in away.text
            posted = await nobody.client.post(path, data={"digest": "x"})
            assert (posted.status_code, posted.headers["location"]) == (303, login)
            assert await status_of(console, ids["connect"]) == "pending"
            assert await refusals(console, ids["connect"]) == []

            # lead signs in from there, comes back to the gate, and is refused.
            back = await submit_login(nobody.client, "lead", "lead-pw-1", next_path=path)
            assert (back.status_code, back.headers["location"]) == (303, path)
            refused = await nobody.client.get(path)
            assert refused.status_code == 403, refused.text
            assert [actor for actor, _ in await refusals(console, ids["connect"])] == [
                await user_id(console, "lead")
            ]

        async with browser(console) as owner:
            back = await submit_login(owner.client, "dev", "dev-pw-1", next_path=path)
            assert (back.status_code, back.headers["location"]) == (303, path)
            gate = await owner.client.get(path)
            assert gate.status_code == 200, gate.text
            assert shown_url(html(gate)) == LINK


# --- no URL from any other field becomes a link ---------------------------------------------------


async def test_urls_in_server_text_are_never_links(database_url: str, mrtr_memory: Mrtr) -> None:
    payload = "https://evil.example/phish?x=1"
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        ids = await mixed_call(console, note="see https://evil.example/argument")
        run_id = await console.new_run("dev", "https://evil.example/run-title")
        hostile = await console.call("mrtr", "hostile", {"payload": payload}, run_id=run_id)
        assert hostile["status"] == "awaiting_input", hostile
        probe = hostile["pending"][0]["id"]
        async with signed_in(console, "dev") as dev, signed_in(console, "lead") as lead:
            pages = {
                "dev inbox": await get(dev, "/"),
                "lead inbox": await get(lead, "/"),
                "dev hostile question": await get(dev, f"/elicitations/{probe}"),
                "lead hostile question": await get(lead, f"/elicitations/{probe}"),
                "dev url question": await get(dev, f"/elicitations/{ids['connect']}"),
                "lead url question": await get(lead, f"/elicitations/{ids['connect']}"),
                "dev form question": await get(dev, f"/elicitations/{ids['approve']}"),
                "gate": await get(dev, f"/connect/{ids['connect']}"),
                "run": await get(dev, f"/runs/{run_id}"),
                "mixed run": await get(lead, f"/runs/{ids['run']}"),
            }
            declined = await console.answer(probe, "decline", who="lead")
            assert declined.status_code == 200, declined.text
            finished = await console.settle(hostile["id"], after_round=1)
            assert result_text(finished) == f"hostile decline: {payload} echoed=False"
            pages["answered question"] = await get(lead, f"/elicitations/{probe}")
            pages["finished run"] = await get(dev, f"/runs/{run_id}")

        for where, soup in pages.items():
            assert_only_internal_links(soup, where)
        for where in ("dev hostile question", "lead hostile question", "answered question", "finished run"):
            assert payload in text(pages[where]), where  # it is there, as text
        assert "https://evil.example/argument" in text(pages["dev form question"])
        assert "https://evil.example/run-title" in text(pages["run"])
        assert "connect.example.com" not in str(pages["lead url question"])
        assert "connect.example.com" not in str(pages["mixed run"])
