"""Error pages: inside the normal layout, with the viewer's own navigation or only a sign-in link, the
message as a sentence and a way back; the API keeps its JSON errors."""

from __future__ import annotations

import pytest

from tests.harness import Mrtr, browser, html, one, running_console, signed_in, text

pytestmark = pytest.mark.anyio


async def test_an_anonymous_404_shows_the_sign_in_link_and_nothing_of_a_signed_in_person(
    database_url: str,
) -> None:
    async with running_console(database_url, {}) as console, browser(console) as anonymous:
        response = await anonymous.client.get("/no-such-page")
        assert response.status_code == 404
        soup = html(response)
        assert text(one(soup, "h1")) == "Not found"
        assert text(one(soup, ".error-message")) == "There is no page at this address."
        assert [text(a) for a in soup.select("header a")] == ["Approval console", "Sign in"]
        assert soup.select("#nav-menu") == []
        page_text = text(soup)
        assert [
            word for word in ("platform", "elsewhere", "Signed in", "Sign out") if word in page_text
        ] == []


async def test_a_signed_in_persons_404_keeps_their_navigation_and_says_the_message_as_a_sentence(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        call = await console.call("mrtr", "two_rounds", {"topic": "errors"})
        question = call["pending"][0]["id"]
        async with signed_in(console, "outsider") as outsider:
            response = await outsider.client.get(f"/elicitations/{question}")
            assert response.status_code == 404
            soup = html(response)
            assert text(one(soup, "header .signed-in-as")) == "Signed in as outsider"
            assert one(soup, '#nav-menu a[href="/decided"]')
            message = text(one(soup, ".error-message"))
            assert message[0].isupper(), message
            assert message.endswith("."), message
            assert one(soup, '.error-back a[href="/"]')
            assert soup.select('header a[href="/login"]') == []


async def test_the_api_still_answers_errors_in_json(database_url: str) -> None:
    async with running_console(database_url, {}) as console:
        response = await console.client.get(
            "/api/v1/elicitations/nope", headers={"Authorization": f"Bearer {console.tokens['dev']}"}
        )
        assert response.status_code == 404
        assert response.headers["content-type"].startswith("application/json")
        assert set(response.json()["error"]) >= {"code", "message"}
