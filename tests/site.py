"""A running `console serve` process on a seeded database, and an API client for it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tests.harness import TEAM, WAIT, Browser, ServerSpec, form_fields, html, one, seed, sign_in
from tests.processes import console_process


@dataclass
class Site:
    """A running `console serve` process and an API client for it."""

    base: str
    tokens: dict[str, str]
    api: httpx.AsyncClient
    database_url: str

    def auth(self, who: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[who]}"}

    async def call(
        self,
        server: str,
        tool: str,
        arguments: dict[str, Any],
        *,
        who: str = "dev",
        title: str = "browser test",
    ) -> dict[str, Any]:
        """Start a run and a tools/call as `who`'s agent; returns the call once it is waiting (bounded)."""
        run = await self.api.post(
            "/api/v1/runs", json={"team": TEAM, "title": title, "agent": "pytest"}, headers=self.auth(who)
        )
        assert run.status_code == 201, run.text
        body = {"server": server, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
        response = await self.api.post(
            f"/api/v1/runs/{run.json()['id']}/calls", params={"wait": WAIT}, json=body, headers=self.auth(who)
        )
        assert response.status_code == 202, response.text
        call: dict[str, Any] = response.json()
        assert call["status"] == "awaiting_input", call
        return call

    async def deploy(self, service: str = "auth-service", **kw: Any) -> dict[str, Any]:
        return await self.call("deployer", "deploy", {"service": service}, **kw)

    async def answer(
        self, elicitation_id: str, action: str, content: Any = None, *, who: str
    ) -> httpx.Response:
        body: dict[str, Any] = {"action": action}
        if content is not None:
            body["content"] = content
        return await self.api.post(
            f"/api/v1/elicitations/{elicitation_id}/answer", json=body, headers=self.auth(who)
        )

    async def get_call(self, call_id: str, *, who: str = "dev", wait: float = 0) -> dict[str, Any]:
        response = await self.api.get(
            f"/api/v1/calls/{call_id}", params={"wait": wait}, headers=self.auth(who)
        )
        assert response.status_code in (200, 202), response.text
        body: dict[str, Any] = response.json()
        return body

    async def question(self, elicitation_id: str, *, who: str = "lead") -> dict[str, Any]:
        response = await self.api.get(f"/api/v1/elicitations/{elicitation_id}", headers=self.auth(who))
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body


@asynccontextmanager
async def running_site(
    database_url: str, servers: dict[str, ServerSpec], tmp_path: Path, **env: str
) -> AsyncIterator[Site]:
    """Seed the database with `servers`, start `console serve` on it (`env` added to its environment)
    and give an API client for it."""
    tokens = await seed(database_url, servers)
    with console_process(database_url, tmp_path / "console.txt", **env) as base:
        async with httpx.AsyncClient(base_url=base, timeout=60) as api:
            yield Site(base, tokens, api, database_url)


async def decide_in_browser(
    site: Site, question_id: str, who: str, action: str, fields: dict[str, str] | None = None
) -> None:
    """Sign in as `who` in a fresh browser and press `action` on the question page, with `fields` (by the
    form's input names: f0, f1 ... in schema order) filled in, as a browser without JavaScript posts it."""
    async with httpx.AsyncClient(base_url=site.base, timeout=60) as client:
        person = Browser(client)
        await sign_in(person, who)
        page = await client.get(f"/elicitations/{question_id}")
        assert page.status_code == 200, page.text[:2000]
        form = one(html(page), "form#decision-form")
        data = {**form_fields(form), **(fields or {}), "action": action}
        decided = await client.post(f"/elicitations/{question_id}", data=data)
        assert decided.status_code == 303, decided.text[:2000]
