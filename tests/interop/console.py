"""One `console serve` per interop test module, on a SQLite database of its own: the foreign packages are
the subject here, and the console's storage is tested on both databases elsewhere."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx

from tests.harness import TEAM, WAIT, ServerSpec, seed
from tests.policies.setup import set_policy_at
from tests.processes import console_process


@dataclass(frozen=True)
class Running:
    """A running console: its base URL, each seeded person's API token, its database."""

    base: str
    tokens: dict[str, str]
    database_url: str

    def auth(self, who: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[who]}"}

    def api(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.base, timeout=WAIT * 3)


@contextmanager
def module_console(
    folder: Path, sqlite_template: Path, servers: dict[str, ServerSpec], **env: str
) -> Iterator[Running]:
    """Seed a copy of the migrated template with `servers` and serve it; `env` is added to the console's."""
    path = folder / "console.db"
    shutil.copyfile(sqlite_template, path)
    database_url = f"sqlite+aiosqlite:///{path}"
    tokens = anyio.run(seed, database_url, servers)
    with console_process(database_url, folder / "console.txt", **env) as base:
        yield Running(base, tokens, database_url)


def gate(running: Running, server: str, tool: str, condition: str) -> None:
    """A gate on `server`'s `tool` for calls meeting `condition`: one approver, never the requester."""
    anyio.run(
        lambda: set_policy_at(
            running.database_url,
            "tool",
            server=server,
            tool=tool,
            condition=condition,
            gate=True,
            required_approvals=1,
            no_self_approval=True,
        )
    )


async def call(
    api: httpx.AsyncClient, running: Running, server: str, tool: str, arguments: Any
) -> dict[str, Any]:
    """dev's agent calls `tool` through the agent API: the call once it finished or asks (bounded)."""
    run = await api.post(
        "/api/v1/runs",
        json={"team": TEAM, "title": "interop", "agent": "pytest"},
        headers=running.auth("dev"),
    )
    assert run.status_code == 201, run.text
    body = {"server": server, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    response = await api.post(
        f"/api/v1/runs/{run.json()['id']}/calls",
        params={"wait": WAIT},
        json=body,
        headers=running.auth("dev"),
    )
    assert response.status_code in (200, 202), response.text
    found: dict[str, Any] = response.json()
    if found["status"] in ("running", "resuming"):  # a busy machine still starting the server: once more
        found = await settle(api, running, found["id"], found["round"])
    return found


async def settle(api: httpx.AsyncClient, running: Running, call_id: str, after_round: int) -> dict[str, Any]:
    """The call once it finished or asks a round after `after_round` (bounded)."""
    with anyio.fail_after(WAIT + 5):
        response = await api.get(
            f"/api/v1/calls/{call_id}",
            params={"wait": WAIT, "after_round": after_round},
            headers=running.auth("dev"),
        )
    assert response.status_code in (200, 202), response.text
    found: dict[str, Any] = response.json()
    return found


async def first_pending(
    api: httpx.AsyncClient, running: Running, *, within: float, who: str = "lead"
) -> dict[str, Any]:
    """The first question pending for `who`, once there is one within `within` seconds (polled)."""
    with anyio.fail_after(within):
        while True:
            try:
                response = await api.get(
                    "/api/v1/elicitations", params={"status": "pending"}, headers=running.auth(who)
                )
            except httpx.RemoteProtocolError:  # a kept-alive connection the console closed meanwhile
                continue
            assert response.status_code == 200, response.text
            items: list[dict[str, Any]] = response.json()["items"]
            if items:
                return items[0]
            await anyio.sleep(0.2)  # a poll interval, not a synchronisation: the loop is bounded above


async def answer(
    api: httpx.AsyncClient,
    running: Running,
    question: str,
    action: str,
    content: Any = None,
    who: str = "lead",
) -> None:
    body: dict[str, Any] = {"action": action}
    if content is not None:
        body["content"] = content
    response = await api.post(f"/api/v1/elicitations/{question}/answer", json=body, headers=running.auth(who))
    assert response.status_code == 200, response.text
