"""Hostile server text stays inert text: an MCP server whose question (message, property name, titles,
descriptions, option values and labels, defaults) and tool arguments carry markup, attribute and htmx payloads
renders with exactly the elements and attributes of a benign rendering, on every page that shows it."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from typing import Any

import httpx
import pytest
from bs4 import BeautifulSoup, Tag

from console.web import invisible
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
)

pytestmark = pytest.mark.anyio

BENIGN = "benign"
PAYLOADS = (
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "' onfocus='x",
    '<div hx-get="/logout" hx-trigger="load">',
    "{{7*7}}",
    "</textarea><svg onload=x>",
    "</option></select><img src=x onerror=alert(8)>",
    '<input name="csrf_token" value="attacker" hx-swap-oob="true">',
    '<meta http-equiv="refresh" content="0;url=https://attacker.example/">',
    "{% print(7*7) %}${7*7}",
)
# Where server text may legitimately sit inside an attribute: form values, and nothing else.
TEXT_ATTRIBUTES = {"value"}
HTMX = {"HX-Request": "true"}
AGE = re.compile(r"^\d+ (s|min|h|d) (ago|left)$")


def shape(soup: BeautifulSoup) -> Counter[tuple[str, tuple[str, ...]]]:
    """The multiset of (tag, sorted attribute names): what a payload must not change."""
    return Counter((tag.name, tuple(sorted(tag.attrs))) for tag in soup.find_all(True))


def attribute_leaks(soup: BeautifulSoup, payload: str) -> list[str]:
    """Attributes other than form values whose value contains the payload."""
    leaks = []
    for tag in soup.find_all(True):
        for name, value in tag.attrs.items():
            text = " ".join(value) if isinstance(value, list) else str(value)
            if payload not in text or name in TEXT_ATTRIBUTES:
                continue
            if name == "href" and text.startswith("/") and not text.startswith("//"):
                continue  # our own links (none carries server text today)
            leaks.append(f"<{tag.name} {name}={text[:80]!r}>")
    return leaks


def evaluated(soup: BeautifulSoup) -> list[str]:
    """Text nodes with a 49 in them (7*7 evaluated), other than ages like '49 s ago'."""
    return [str(node) for node in soup.find_all(string=True) if "49" in node and not AGE.match(node.strip())]


def submit(form: Tag) -> dict[str, list[str]]:
    """What a browser posts for the form as it stands (defaults included)."""
    data: dict[str, list[str]] = {}
    for control in form.select("input, select"):
        name = control.get("name")
        if not isinstance(name, str):
            continue
        if control.name == "select":
            options = control.select("option")
            chosen = control.select_one("option[selected]") or (options[0] if options else None)
            values = [str(chosen.get("value", ""))] if chosen is not None else []
        elif control.get("type") in ("radio", "checkbox"):
            values = [str(control.get("value", "on"))] if control.has_attr("checked") else []
        else:
            values = [str(control.get("value", ""))]
        data.setdefault(name, []).extend(values)
    return data


async def renderings(console: Console, who: Browser, payload: str) -> dict[str, httpx.Response]:
    """Every page that shows the hostile question, before and after it is answered through the form."""
    run_id = await console.new_run("dev", payload)
    call = await console.call("mrtr", "hostile", {"payload": payload}, run_id=run_id)
    assert call["status"] == "awaiting_input", call
    question_id = call["pending"][0]["id"]
    url = f"/elicitations/{question_id}"
    pages = {
        "inbox": await who.client.get("/"),
        "inbox fragment": await who.client.get("/inbox", headers=HTMX),
        "question": await who.client.get(url),
    }
    form = one(html(pages["question"]), "form#decision-form")
    answer = {**submit(form), "action": ["accept"]}
    choice = str(form.select('input[type="radio"]')[0]["name"])  # "choice" comes before "legacy"
    pages["invalid answer"] = await who.client.post(url, data={**answer, choice: ["not-an-option"]})
    accepted = await who.client.post(url, data=answer)
    assert accepted.status_code == 303, accepted.text[:500]
    done = await console.settle(call["id"], after_round=call["round"])
    assert result_text(done) == f"hostile accept: {payload} echoed=True"  # the property name came back intact
    pages["answered question"] = await who.client.get(url)
    pages["outcome fragment"] = await who.client.get(f"{url}/outcome", headers=HTMX)
    pages["run"] = await who.client.get(f"/runs/{run_id}")
    pages["inbox after"] = await who.client.get("/")
    return pages


def check_visible_text(name: str, soup: BeautifulSoup, payload: str) -> list[str]:
    """The payload shows as plain text where each page puts server text."""
    expected = {
        "inbox": ("a.question-link", f"Hostile: {payload}"),
        "question": ("h1.question-message", f"Hostile: {payload}"),
        "answered question": ("pre.result", f"hostile accept: {payload} echoed=True"),
        "run": ("pre.result", f"hostile accept: {payload} echoed=True"),
    }
    if name not in expected:
        return []
    selector, text = expected[name]
    shown = [" ".join(t.get_text().split()) for t in soup.select(selector)]
    return [] if shown == [" ".join(text.split())] else [f"{selector} shows {shown!r}"]


async def test_hostile_server_text_adds_no_element_or_attribute_to_any_page(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with (
        running_console(database_url, {"mrtr": mrtr_memory.spec}) as console,
        signed_in(console, "lead") as lead,
    ):
        benign = await renderings(console, lead, BENIGN)
        expected_status = {name: r.status_code for name, r in benign.items()}
        assert expected_status == {
            "inbox": 200,
            "inbox fragment": 200,
            "question": 200,
            "invalid answer": 422,
            "answered question": 200,
            "outcome fragment": 200,
            "run": 200,
            "inbox after": 200,
        }
        benign_shapes = {name: shape(html(r)) for name, r in benign.items()}
        problems: dict[tuple[str, str], Any] = {}
        for payload in PAYLOADS:
            for name, response in (await renderings(console, lead, payload)).items():
                soup = html(response)
                found: list[str] = []
                if response.status_code != expected_status[name]:
                    found.append(f"status {response.status_code}")
                if shape(soup) != benign_shapes[name]:
                    extra = shape(soup) - benign_shapes[name]
                    missing = benign_shapes[name] - shape(soup)
                    found.append(f"markup differs: extra {dict(extra)}, missing {dict(missing)}")
                found += attribute_leaks(soup, payload)
                found += check_visible_text(name, soup, payload)
                if "7*7" in payload:
                    found += [f"evaluated: {text!r}" for text in evaluated(soup)]
                if found:
                    problems[(payload, name)] = found
        assert problems == {}


async def test_hostile_text_in_the_invalid_form_keeps_the_typed_value_as_a_value(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    payload = '"><script>alert(1)</script>'
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        call = await console.call("mrtr", "hostile", {"payload": "x"})
        url = f"/elicitations/{call['pending'][0]['id']}"
        async with signed_in(console, "lead") as lead:
            form = one(html(await lead.client.get(url)), "form#decision-form")
            text_input = one(form, 'input[type="text"]')
            choice = str(form.select('input[type="radio"]')[0]["name"])  # "choice" comes before "legacy"
            data = {
                **form_fields(form),
                "action": "accept",
                str(text_input["name"]): payload,
                choice: payload,  # not one of the options
            }
            response = await lead.client.post(url, data=data)
            assert response.status_code == 422
            soup = html(response)
            assert soup.find("script", src=False) is None
            again = one(soup, "form#decision-form")
            assert one(again, 'input[type="text"]')["value"] == payload
            assert attribute_leaks(soup, payload) == []


async def list_rows(console: Console, who: Browser, payload: str) -> dict[str, BeautifulSoup]:
    """The hostile run's row in the runs list and its answered question's row in the Decided view."""
    run_id = await console.new_run("dev", payload)
    call = await console.call("mrtr", "hostile", {"payload": payload}, run_id=run_id)
    url = f"/elicitations/{call['pending'][0]['id']}"
    form = one(html(await who.client.get(url)), "form#decision-form")
    accepted = await who.client.post(url, data={**submit(form), "action": ["accept"]})
    assert accepted.status_code == 303, accepted.text[:500]
    await console.settle(call["id"], after_round=call["round"])
    runs = html(await who.client.get("/runs"))
    decided = html(await who.client.get("/decided"))
    return {
        "run row": BeautifulSoup(str(one(runs, f"#run-{run_id}")), "html.parser"),
        "decided row": BeautifulSoup(
            str(one(decided, f"#decided-{call['pending'][0]['id']}")), "html.parser"
        ),
    }


async def test_hostile_text_in_the_runs_and_decided_lists_stays_text(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with (
        running_console(database_url, {"mrtr": mrtr_memory.spec}) as console,
        signed_in(console, "lead") as lead,
    ):
        benign = {name: shape(row) for name, row in (await list_rows(console, lead, BENIGN)).items()}
        problems: dict[tuple[str, str], list[str]] = {}
        for payload in PAYLOADS:
            rows = await list_rows(console, lead, payload)
            found = [f"{name}: markup differs" for name, row in rows.items() if shape(row) != benign[name]]
            found += [leak for row in rows.values() for leak in attribute_leaks(row, payload)]
            if " ".join(one(rows["run row"], "a.run-link").get_text().split()) != " ".join(payload.split()):
                found.append("the run's title is not shown as text")
            if "Hostile: " + " ".join(payload.split()) not in " ".join(
                rows["decided row"].get_text().split()
            ):
                found.append("the question is not shown as text")
            if "7*7" in payload:
                found += [f"evaluated: {t!r}" for row in rows.values() for t in evaluated(row)]
            if found:
                problems[(payload, "lists")] = found
        assert problems == {}


# --- hidden and direction-changing characters ---------------------------------------------------

# Embeddings and overrides, isolates, marks (LRM, RLM, ALM), zero-width space/joiners, word joiner, BOM,
# a soft hyphen, a tag character and two C0 controls: each one hides or reorders what a person reads.
HIDDEN = (
    "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
    "\u200b\u200c\u200d\u2060\ufeff\u00ad\U000e0041\x07\x1b"
)
BIDI_PAYLOAD = "invoice\u202efdp.exe " + "".join(f"{c}|" for c in HIDDEN)


def marked(text: str) -> str:
    """`text` as a page must show it: each hidden character as its code point."""
    return "".join(f"⟦U+{ord(c):04X}⟧" if c in HIDDEN else c for c in text)


def hidden_in_text(soup: BeautifulSoup) -> list[str]:
    return [repr(str(node))[:80] for node in soup.find_all(string=True) if any(c in node for c in HIDDEN)]


def hidden_in_attributes(soup: BeautifulSoup) -> list[str]:
    """Attributes other than form values (which go back to the server exactly) holding a hidden character."""
    return [
        f"<{tag.name} {name}>"
        for tag in soup.find_all(True)
        for name, value in tag.attrs.items()
        if name not in TEXT_ATTRIBUTES and any(c in str(value) for c in HIDDEN)
    ]


def shown(soup: BeautifulSoup, selector: str) -> str:
    """The text of the one element `selector` matches, checking that every marker in it is a marked span."""
    element = one(soup, selector)
    spans = element.select("span.invisible-char")
    assert [span.get_text() for span in spans] == re.findall(r"⟦U\+[0-9A-F]{4,6}⟧", element.get_text())
    return element.get_text()


async def test_hidden_and_direction_changing_characters_show_as_code_points_on_every_page(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    payload = BIDI_PAYLOAD
    async with (
        running_console(database_url, {"mrtr": mrtr_memory.spec}) as console,
        signed_in(console, "lead") as lead,
    ):
        pages = await renderings(console, lead, payload)  # answered through the form: the values round-trip
        pages["runs list"] = await lead.client.get("/runs")
        pages["decided list"] = await lead.client.get("/decided")
        link_call = await console.call("mrtr", "form_and_url", {"message": payload})
        connect = next(p["id"] for p in link_call["pending"] if p["key"] == "connect")
        assert (await console.question(connect, who="dev"))["message"] == payload  # data stays exact
        async with signed_in(console, "dev") as dev:
            pages["consent"] = await dev.client.get(f"/connect/{connect}")
        async with signed_in(console, "viewer") as auditor:
            listing = await auditor.client.get(
                "/audit", params={"action": "question_answered", "tool": "hostile"}
            )
            pages["audit list"] = listing
            detail = one(html(listing), "#audit-events tbody tr td a")["href"]
            pages["audit event"] = await auditor.client.get(str(detail))

        problems = {}
        for name, response in pages.items():
            soup = html(response)
            found = hidden_in_text(soup) + hidden_in_attributes(soup)
            if found:
                problems[name] = found
        assert problems == {}
        soups = {name: html(response) for name, response in pages.items()}
        assert shown(soups["question"], "h1.question-message") == f"Hostile: {marked(payload)}"
        assert shown(soups["inbox"], "a.question-link") == f"Hostile: {marked(payload)}"
        result = f"hostile accept: {marked(payload)} echoed=True"
        assert shown(soups["run"], "pre.result") == result
        assert shown(soups["run"], "h1") == marked(payload)  # the agent's run title
        assert one(soups["run"], "title").get_text().startswith(f"Run {marked(payload)}")  # plain text there
        assert shown(soups["consent"], "h1.question-message") == marked(payload)
        assert shown(soups["audit event"], "#saw-message") == f"Hostile: {marked(payload)}"
        assert marked(payload) in [link.get_text() for link in soups["runs list"].select("a.run-link")]
        decided = [" ".join(row.get_text().split()) for row in soups["decided list"].select("tbody tr")]
        assert any(f"Hostile: {' '.join(marked(payload).split())}" in row for row in decided), decided


def test_every_control_and_format_character_is_revealed_and_nothing_else() -> None:
    everything = "".join(chr(c) for c in (*range(0xD800), *range(0xE000, 0x30000), *range(0xE0000, 0xF0000)))
    hidden = {c for c in everything if unicodedata.category(c) in ("Cc", "Cf") and c not in "\t\n\r"}
    assert set(invisible.HIDDEN.findall(everything)) == hidden
    assert "\u202e" in hidden  # the right-to-left override
    assert "\U000e0041" in hidden  # a tag character
