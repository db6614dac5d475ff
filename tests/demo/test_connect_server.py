"""The connect demo server: bearer-identified MCP users, a URL-mode question, and a same-user connect page."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
import pytest

from console.errors import McpProtocolError, McpUnavailable
from console.mcp import Complete, ConnectionPool, Endpoint, InputRequired, McpRequest, Reply
from tests.processes import ServerProcess, start_http_server

pytestmark = pytest.mark.anyio

TEST_TIMEOUT = 30.0
USERS = {"dev": ("tok-dev-" + "a" * 16, "pw-dev"), "lead": ("tok-lead-" + "b" * 16, "pw-lead")}
MESSAGE = "Connect your Example Tracker account so the agent can create issues for you."


@pytest.fixture
def connect_server(tmp_path: Path) -> Iterator[ServerProcess]:
    """A fresh connect demo server per test (its state lives in memory), as its own process."""
    env = {
        "CONNECT_STATE_KEY": secrets.token_urlsafe(32),
        "CONNECT_USERS": ",".join(f"{name}:{token}:{pw}" for name, (token, pw) in USERS.items()),
    }
    with start_http_server(
        [sys.executable, "-m", "console.demo.connect"],
        env,
        tmp_path / "stderr.txt",
        listen_args=("--port", "0"),
    ) as server:
        yield server


@dataclass
class Demo:
    """An MCP client per demo user (through the console's own pool) and a browser stand-in."""

    url: str
    pool: ConnectionPool
    web: httpx2.AsyncClient

    @property
    def base(self) -> str:
        return self.url.removesuffix("/mcp")

    def endpoint(self, user: str) -> Endpoint:
        return Endpoint.http(self.url, headers={"Authorization": f"Bearer {USERS[user][0]}"})

    async def create_issue(
        self,
        user: str,
        title: str,
        answer: dict[str, Any] | None = None,
        state: str | None = None,
    ) -> Reply:
        request = McpRequest(
            "tools/call",
            {"name": "create_issue", "arguments": {"title": title}},
            input_responses={"connect": answer} if answer is not None else None,
            request_state=state,
        )
        return await self.pool.send(self.endpoint(user), request)

    async def stats(self) -> dict[str, Any]:
        response = await self.web.get(f"{self.base}/stats")
        response.raise_for_status()
        stats: dict[str, Any] = response.json()
        return stats

    async def sign_in(self, link: str, user: str, password: str | None = None) -> httpx2.Response:
        """What a person does in the browser: open the link, then submit the sign-in form."""
        form = await self.web.get(link)
        assert form.status_code == 200, form.text
        [flow] = parse_qs(urlsplit(link).query)["flow"]
        assert f'name="flow" value="{flow}"' in form.text
        return await self.web.post(
            f"{self.base}/connect/start",
            data={"flow": flow, "username": user, "password": password or USERS[user][1]},
        )


@pytest.fixture
async def demo(connect_server: ServerProcess) -> AsyncIterator[Demo]:
    async with (
        ConnectionPool(request_timeout=20) as pool,
        httpx2.AsyncClient(timeout=10, follow_redirects=False) as web,
    ):
        yield Demo(connect_server.url, pool, web)


def question(reply: Reply) -> tuple[dict[str, Any], str]:
    """The one URL-mode question of an input_required reply, and its requestState."""
    assert isinstance(reply, InputRequired), reply
    assert list(reply.input_requests) == ["connect"]
    request = reply.input_requests["connect"]
    assert request["method"] == "elicitation/create"
    assert reply.request_state is not None
    params: dict[str, Any] = request["params"]
    return params, reply.request_state


def text(reply: Reply) -> str:
    assert isinstance(reply, Complete), reply
    [content] = reply.result["content"]
    assert reply.result.get("isError") in (None, False)
    result: str = content["text"]
    return result


async def test_an_mcp_request_without_a_valid_bearer_token_is_refused(demo: Demo) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        body = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {}}
        for headers in ({}, {"Authorization": "Bearer not-a-token"}, {"Authorization": "Basic ZGV2OnB3"}):
            response = await demo.web.post(demo.url, json=body, headers=headers)
            assert response.status_code == 401
            assert response.headers["www-authenticate"].startswith("Bearer")
        with pytest.raises(McpUnavailable):
            await demo.pool.send(
                Endpoint.http(demo.url),
                McpRequest("tools/call", {"name": "create_issue", "arguments": {"title": "x"}}),
            )


async def test_create_issue_asks_with_a_url_pointing_at_the_servers_own_connect_page(demo: Demo) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        params, state = question(await demo.create_issue("dev", "Login is slow"))
        assert params["mode"] == "url"
        assert params["message"] == MESSAGE
        assert params["url"].startswith(f"{demo.base}/connect/start?flow=")
        assert "dev" not in params["url"]  # the link carries no user data
        assert state


async def test_asking_does_not_touch_the_connect_page(demo: Demo) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        question(await demo.create_issue("dev", "Login is slow"))
        assert await demo.stats() == {"connect_requests": 0, "connections": []}


async def test_the_wrong_user_signing_in_on_the_connect_page_gets_403_and_no_connection(demo: Demo) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        params, state = question(await demo.create_issue("dev", "Login is slow"))
        refused = await demo.sign_in(params["url"], "lead")
        assert refused.status_code == 403
        assert "This connect link was made for another user." in refused.text
        assert (await demo.stats())["connections"] == []
        again, _ = question(await demo.create_issue("dev", "Login is slow", {"action": "accept"}, state))
        assert again["url"] == params["url"]


async def test_a_wrong_password_records_no_connection(demo: Demo) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        params, _ = question(await demo.create_issue("dev", "Login is slow"))
        refused = await demo.sign_in(params["url"], "dev", password=USERS["lead"][1])
        assert refused.status_code == 401
        assert "Wrong user name or password." in refused.text
        assert (await demo.stats())["connections"] == []


async def test_the_right_user_connects_and_the_retry_creates_the_issue(demo: Demo) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        params, state = question(await demo.create_issue("dev", "Login is slow"))
        connected = await demo.sign_in(params["url"], "dev")
        assert connected.status_code == 200
        assert "Connected. You can go back to the console." in connected.text
        assert await demo.stats() == {"connect_requests": 2, "connections": ["dev"]}
        done = await demo.create_issue("dev", "Login is slow", {"action": "accept"}, state)
        assert text(done) == "Issue created for dev: Login is slow"
        assert text(await demo.create_issue("dev", "Second one")) == "Issue created for dev: Second one"


async def test_asking_again_before_connecting_repeats_the_identical_url(demo: Demo) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        first, state = question(await demo.create_issue("dev", "Login is slow"))
        again, new_state = question(
            await demo.create_issue("dev", "Login is slow", {"action": "accept"}, state)
        )
        assert again == first
        third, _ = question(await demo.create_issue("dev", "Login is slow", {"action": "accept"}, new_state))
        assert third == first
        assert await demo.stats() == {"connect_requests": 0, "connections": []}


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_decline_or_cancel_ends_the_call_without_a_connection(demo: Demo, action: str) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        _, state = question(await demo.create_issue("dev", "Login is slow"))
        done = await demo.create_issue("dev", "Login is slow", {"action": action}, state)
        assert text(done) == f"Not connected ({action})."


async def test_a_tampered_state_is_rejected_as_invalid_request_state(demo: Demo) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        _, state = question(await demo.create_issue("dev", "Login is slow"))
        body, _, mac = state.partition(".")
        forged = body[:-2] + ("A" if body[-2] != "A" else "B") + body[-1] + "." + mac
        with pytest.raises(McpProtocolError) as caught:
            await demo.create_issue("dev", "Login is slow", {"action": "accept"}, forged)
        assert caught.value.rpc_code == -32602
        assert caught.value.data == {"reason": "invalid_request_state"}


async def test_a_state_issued_for_another_user_is_rejected(demo: Demo) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        _, devs_state = question(await demo.create_issue("dev", "Login is slow"))
        with pytest.raises(McpProtocolError) as caught:
            await demo.create_issue("lead", "Login is slow", {"action": "accept"}, devs_state)
        assert caught.value.rpc_code == -32602
        assert caught.value.data == {"reason": "invalid_request_state"}


async def test_an_edited_connect_link_is_not_a_valid_link(demo: Demo) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        params, _ = question(await demo.create_issue("dev", "Login is slow"))
        [flow] = parse_qs(urlsplit(params["url"]).query)["flow"]
        nonce, _, tag = flow.partition(".")
        edited = f"{nonce[:-1]}{'A' if nonce[-1] != 'A' else 'B'}.{tag}"
        for response in (
            await demo.web.get(f"{demo.base}/connect/start", params={"flow": edited}),
            await demo.web.post(
                f"{demo.base}/connect/start", data={"flow": edited, "username": "dev", "password": "pw-dev"}
            ),
        ):
            assert response.status_code == 404
            assert "not valid" in response.text
        assert (await demo.stats())["connections"] == []


def test_the_server_refuses_to_start_with_a_short_key() -> None:
    finished = subprocess.run(
        [sys.executable, "-m", "console.demo.connect", "--port", "0"],
        env={**os.environ, "CONNECT_STATE_KEY": "too-short", "CONNECT_USERS": "dev:tok:pw"},
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert finished.returncode == 2
    assert b"CONNECT_STATE_KEY" in finished.stderr
    assert finished.stdout == b""
