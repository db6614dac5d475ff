"""The console under test: seeded users and servers, the app with its lifespan, and API helpers."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
from bs4 import BeautifulSoup, Tag
from fastapi import FastAPI
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from console.app import create_app
from console.audit.models import AuditEvent
from console.config import Settings
from console.db import create_engine, session_factory
from console.dispatch.worker import Dispatcher
from console.identity import create_team, create_token, create_user, team_by_name
from console.identity.credentials import CredentialCipher
from console.identity.models import Membership, User
from console.mcp.admin import ServerSettings, create_server
from console.mcp.models import McpServer
from console.mcp.sealed import Outbound
from console.runtime import Runtime, runtime_of
from console.transactions import transaction
from tests.memory import in_memory, memory_command

REPO = Path(__file__).resolve().parent.parent
MRTR_SERVER = str(REPO / "tests/servers/mrtr_server.py")
# Our everything-style test server: the conformance suite's tools, prompts and resources.
EVERYTHING = [sys.executable, str(REPO / "tests" / "servers" / "everything_server.py")]
BULKY = [sys.executable, str(REPO / "tests" / "servers" / "bulky_server.py")]  # results of any size
# The same servers in the console's own event loop (tests/memory.py), for a console `running_console` runs.
MEMORY_EVERYTHING = memory_command("everything")
MEMORY_BULKY = memory_command("bulky")
TEAM = "platform"
# (name, team, role): dev's agent makes the calls; lead and lead2 approve; outsider is in another team.
PEOPLE = (
    ("dev", TEAM, "member"),
    ("lead", TEAM, "approver"),
    ("lead2", TEAM, "approver"),
    ("viewer", TEAM, "auditor"),
    ("outsider", "elsewhere", "approver"),
)
WAIT = 20.0
SECRET_KEY = "harness-console-secret-" + "h" * 32  # CONSOLE_SECRET_KEY of every console under test


@dataclass
class ServerSpec:
    command: list[str] | None = None
    url: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    credential_name: str = ""  # each user's own credential, as this header (HTTP) or variable (stdio)
    oauth: bool = False  # each user connects their own account (OAuth)


def stdio_deployer(key: str, **env: str) -> ServerSpec:
    return ServerSpec(
        command=[sys.executable, "-m", "console.demo.deployer"], env={"DEPLOY_STATE_KEY": key, **env}
    )


@dataclass(frozen=True)
class Mrtr:
    """The MRTR test server as the console reaches it, and the file where it logs every request."""

    spec: ServerSpec
    log: Path


def stdio_mrtr(log: Path, **env: str) -> ServerSpec:
    return ServerSpec(command=[sys.executable, MRTR_SERVER], env={"MRTR_LOG": str(log), **env})


def memory_mrtr(log: Path, **env: str) -> ServerSpec:
    """The MRTR test server in the console's own event loop (tests/memory.py): only for a console that
    `running_console` runs."""
    return ServerSpec(command=memory_command("mrtr"), env={"MRTR_LOG": str(log), **env})


async def seed(
    database_url: str, servers: dict[str, ServerSpec], *, secret_key: str | None = SECRET_KEY
) -> dict[str, str]:
    """Teams, people (with API tokens) and servers, registered by the operator as internal (they run on
    this machine) with their values sealed under `secret_key`; returns each person's token."""
    engine = create_engine(database_url)
    factory = session_factory(engine)
    tokens: dict[str, str] = {}
    try:
        async with transaction(factory) as session:
            for team in (TEAM, "elsewhere"):
                await create_team(session=session, name=team)
            for name, team, role in PEOPLE:
                await create_user(
                    session=session, name=name, team_name=team, role=role, password=f"{name}-pw-1"
                )
                issued = await create_token(
                    session=session, user_name=name, team_name=team, cipher=CredentialCipher(secret_key)
                )
                tokens[name] = issued.token
            for name, spec in servers.items():
                await register_server(session, name, spec, secret_key=secret_key)
    finally:
        await engine.dispose()
    return tokens


async def register_server(
    session: AsyncSession, name: str, spec: ServerSpec, *, secret_key: str | None = SECRET_KEY
) -> McpServer:
    """Register a server of the platform team as the operator does; internal: it runs on this machine."""
    settings = ServerSettings(
        transport="stdio" if spec.command else "http",
        command=shlex.join(spec.command or []),
        url=spec.url or "",
        env=spec.env,
        credential_name=spec.credential_name,
        oauth=spec.oauth,
        internal=True,
    )
    outbound = Outbound(CredentialCipher(secret_key))
    return await create_server(
        session=session, by=None, team_name=TEAM, name=name, settings=settings, outbound=outbound
    )


@dataclass
class Console:
    app: FastAPI
    client: httpx.AsyncClient
    tokens: dict[str, str]

    @property
    def runtime(self) -> Runtime:
        return runtime_of(self.app)

    def auth(self, who: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[who]}"}

    def new_dispatcher(self, **options: Any) -> Dispatcher:
        """A dispatcher (not started) on this console's database, MCP pool, settings and signals."""
        runtime = self.runtime
        return Dispatcher(
            factory=runtime.factory,
            pool=runtime.pool,
            settings=runtime.settings,
            signals=runtime.signals,
            attester=None,
            **options,
        )

    async def new_run(self, who: str = "dev", title: str = "test run") -> str:
        response = await self.client.post(
            "/api/v1/runs", json={"team": TEAM, "title": title, "agent": "pytest"}, headers=self.auth(who)
        )
        assert response.status_code == 201, response.text
        run_id: str = response.json()["id"]
        return run_id

    async def start(
        self,
        server: str,
        method: str,
        params: dict[str, Any],
        *,
        who: str = "dev",
        run_id: str | None = None,
        wait: float = WAIT,
        callback_url: str | None = None,
    ) -> httpx.Response:
        run_id = run_id or await self.new_run(who)
        body: dict[str, Any] = {"server": server, "method": method, "params": params}
        if callback_url is not None:
            body["callback_url"] = callback_url
        return await self.client.post(
            f"/api/v1/runs/{run_id}/calls", params={"wait": wait}, json=body, headers=self.auth(who)
        )

    async def call(self, server: str, tool: str, arguments: dict[str, Any], **kw: Any) -> dict[str, Any]:
        """The tool call once it finished or asks (see `request`)."""
        return await self.request(server, "tools/call", {"name": tool, "arguments": arguments}, **kw)

    async def request(self, server: str, method: str, params: dict[str, Any], **kw: Any) -> dict[str, Any]:
        """The call once it finished or asks, as `start` returns it; with the default wait, a call still
        running then (a loaded machine starting its server) is waited for once more, bounded."""
        response = await self.start(server, method, params, **kw)
        assert response.status_code in (200, 202), response.text
        body: dict[str, Any] = response.json()
        if "wait" not in kw and body["status"] in ("running", "resuming"):
            body = await self.settle(body["id"], who=kw.get("who", "dev"), after_round=body["round"])
        return body

    async def answer(
        self, elicitation_id: str, action: str, content: Any = None, *, who: str = "lead", **extra: Any
    ) -> httpx.Response:
        body: dict[str, Any] = {"action": action, **extra}
        if content is not None:
            body["content"] = content
        return await self.client.post(
            f"/api/v1/elicitations/{elicitation_id}/answer", json=body, headers=self.auth(who)
        )

    async def get_call(
        self, call_id: str, *, who: str = "dev", wait: float = 0, after_round: int | None = None
    ) -> dict[str, Any]:
        params: dict[str, float] = {"wait": wait}
        if after_round is not None:
            params["after_round"] = after_round
        response = await self.client.get(f"/api/v1/calls/{call_id}", params=params, headers=self.auth(who))
        assert response.status_code in (200, 202), response.text
        body: dict[str, Any] = response.json()
        return body

    async def settle(
        self, call_id: str, *, who: str = "dev", after_round: int | None = None, wait: float = WAIT
    ) -> dict[str, Any]:
        """The call once it finished, or asks a round after `after_round` (bounded by `wait`)."""
        with anyio.fail_after(wait + 5):
            return await self.get_call(call_id, who=who, wait=wait, after_round=after_round)

    async def answer_and_settle(
        self,
        call: dict[str, Any],
        action: str,
        content: Any = None,
        *,
        who: str = "lead",
        key: str | None = None,
    ) -> dict[str, Any]:
        """Answer a pending question of `call`, then wait for the call to finish or ask its next round."""
        pending = [p for p in call["pending"] if key is None or p["key"] == key]
        response = await self.answer(pending[0]["id"], action, content, who=who)
        assert response.status_code == 200, response.text
        return await self.settle(call["id"], after_round=call["round"])

    async def pending_questions(self, who: str) -> list[dict[str, Any]]:
        """The pending questions `who` is shown, newest first."""
        response = await self.client.get(
            "/api/v1/elicitations", params={"status": "pending"}, headers=self.auth(who)
        )
        assert response.status_code == 200, response.text
        items: list[dict[str, Any]] = response.json()["items"]
        return items

    async def audit_payloads(self, action: str) -> list[dict[str, Any]]:
        """The payloads of the audit events of one action, oldest first."""
        async with transaction(self.runtime.factory) as session:
            query = select(AuditEvent).where(AuditEvent.action == action).order_by(AuditEvent.seq)
            return [json.loads(e.payload_json) for e in (await session.execute(query)).scalars()]

    async def question(self, elicitation_id: str, *, who: str = "lead") -> dict[str, Any]:
        response = await self.client.get(f"/api/v1/elicitations/{elicitation_id}", headers=self.auth(who))
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body


def signed_call(item: str) -> dict[str, Any]:
    """The body of a call of the MRTR server's `signed` tool (one question, then a signed result)."""
    return {
        "server": "mrtr",
        "method": "tools/call",
        "params": {"name": "signed", "arguments": {"item": item}},
    }


def result_text(call: dict[str, Any]) -> str:
    """The text of a completed tools/call result."""
    assert call["status"] == "completed", json.dumps(call)[:2000]
    return "".join(part["text"] for part in call["result"]["content"] if part["type"] == "text")


def test_settings(database_url: str, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "env": "test",
        "base_url": "http://console.test",
        "secret_key": SECRET_KEY,
        **overrides,
    }
    return Settings(database_url=database_url, **values)


@asynccontextmanager
async def running_console(
    database_url: str,
    servers: dict[str, ServerSpec],
    *,
    tokens: dict[str, str] | None = None,
    dispatcher: bool = True,
    notifier: bool = True,
    **overrides: Any,
) -> AsyncIterator[Console]:
    """The app with its lifespan (pool and dispatcher) running, reachable through an in-process client; it
    reaches the servers registered to run in memory (tests/memory.py) in its own event loop."""
    if tokens is None:
        tokens = await seed(database_url, servers, secret_key=overrides.get("secret_key", SECRET_KEY))
    settings = test_settings(database_url, **overrides)
    app = create_app(settings, dispatcher=dispatcher, notifier=notifier, transports=in_memory)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url=runtime_of(app).settings.base_url, timeout=60
        ) as client:
            yield Console(app, client, tokens)


# --- the web pages, as a browser without JavaScript uses them -----------------------------


@dataclass
class Browser:
    """One browser: its own cookie jar; `csrf` is its session's CSRF token once signed in."""

    client: httpx.AsyncClient
    csrf: str = ""


def text(tag: BeautifulSoup | Tag) -> str:
    """What a person reads in an element: its text with whitespace collapsed."""
    return " ".join(tag.get_text(" ").split())


def html(response: httpx.Response) -> BeautifulSoup:
    return BeautifulSoup(response.text, "html.parser")


def one(soup: BeautifulSoup | Tag, selector: str) -> Tag:
    """The single element `selector` must match."""
    found = soup.select(selector)
    assert len(found) == 1, f"{len(found)} elements match {selector!r}"
    return found[0]


def form_fields(form: Tag) -> dict[str, str]:
    """The hidden inputs of a form, as a browser would post them."""
    fields: dict[str, str] = {}
    for tag in form.select('input[type="hidden"]'):
        name, value = tag.get("name"), tag.get("value", "")
        assert isinstance(name, str)
        assert isinstance(value, str)
        fields[name] = value
    return fields


@asynccontextmanager
async def browser(console: Console, *, address: str = "127.0.0.1") -> AsyncIterator[Browser]:
    """A new browser (empty cookie jar) talking to the same app from `address`; redirects not followed.

    Like a real browser it gets the 500 page when the app fails; the exception is only logged.
    """
    transport = httpx.ASGITransport(app=console.app, client=(address, 50000), raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url=console.client.base_url, timeout=60) as client:
        yield Browser(client)


async def submit_login(
    client: httpx.AsyncClient, name: str, password: str, *, next_path: str | None = None
) -> httpx.Response:
    """GET /login (the CSRF cookie and hidden fields), then POST its form; the POST's response."""
    page = await client.get("/login", params={"next": next_path} if next_path is not None else None)
    assert page.status_code == 200, page.text
    data = {**form_fields(one(html(page), 'form[action="/login"]')), "name": name, "password": password}
    return await client.post("/login", data=data)


async def session_csrf(client: httpx.AsyncClient) -> str:
    """The CSRF token of the signed-in session, from the sign-out form every page carries."""
    page = await client.get("/")
    assert page.status_code == 200, page.text
    return form_fields(one(html(page), 'form[action="/logout"]'))["csrf_token"]


async def sign_in(who: Browser, name: str) -> None:
    """Sign `who` in as `name` (seeded password) through the real form."""
    response = await submit_login(who.client, name, f"{name}-pw-1")
    assert response.status_code == 303, response.text
    who.csrf = await session_csrf(who.client)


@asynccontextmanager
async def signed_in(console: Console, name: str, *, address: str = "127.0.0.1") -> AsyncIterator[Browser]:
    """A new browser signed in as `name` through the real sign-in form."""
    async with browser(console, address=address) as who:
        await sign_in(who, name)
        yield who


async def user_id(console: Console, name: str) -> str:
    """The id of a seeded person."""
    async with transaction(console.runtime.factory) as session:
        found: str = (await session.execute(select(User.id).where(User.name == name))).scalar_one()
        return found


async def promote(console: Console, name: str, *, role: str | None = None, site_admin: bool = False) -> None:
    """Give a seeded person another role in the platform team, or make them a site admin."""
    async with transaction(console.runtime.factory) as session:
        user = (await session.execute(select(User).where(User.name == name))).scalar_one()
        if site_admin:
            user.site_admin = True
        if role is not None:
            platform = await team_by_name(session=session, name=TEAM)
            await session.execute(
                update(Membership)
                .where(Membership.user_id == user.id, Membership.team_id == platform.id)
                .values(role=role)
            )
        await session.commit()
