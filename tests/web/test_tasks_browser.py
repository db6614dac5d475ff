"""In Chromium: a server runs a call as a task (the tasks extension) that requires input twice; an approver
answers the first question, the console process is killed and another one started on the same database,
and the approver answers the second there; the task completes with both answers."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Browser, expect

from tests.harness import WAIT, ServerSpec, seed
from tests.processes import console_process, read_log, start_http_server
from tests.site import Site
from tests.web.browser import RESUME_MS, new_page, shoot, sign_in

pytestmark = [pytest.mark.anyio, pytest.mark.browser]

TASKS_SERVER = str(Path(__file__).parents[1] / "servers" / "tasks_server.py")


async def test_a_task_asks_twice_across_a_console_restart_and_completes_with_both_answers(
    sqlite_url: str, browser: Browser, tmp_path: Path, shot_prefix: str
) -> None:
    log = tmp_path / "tasks.jsonl"
    env = {"TASKS_LOG": str(log), "TASKS_POLL_MS": "200"}
    with start_http_server([sys.executable, TASKS_SERVER], env, tmp_path / "tasks-stderr.txt") as server:
        tokens = await seed(sqlite_url, {"tasks": ServerSpec(url=server.url)})
        with console_process(sqlite_url, tmp_path / "console.txt") as base:
            async with httpx.AsyncClient(base_url=base, timeout=60) as api:
                site = Site(base, tokens, api, sqlite_url)
                call = await site.call("tasks", "provision", {"name": "search"})
                assert [p["key"] for p in call["pending"]] == ["region"]
                page = await new_page(browser, base)
                await sign_in(page, "lead")
                await page.get_by_role("link", name="Which region should the service run in?").click()
                await expect(page.locator("#task")).to_contain_text(
                    "The server runs this call as a task that waits for this answer"
                )
                await page.get_by_label("us-east", exact=True).check()
                await shoot(page, f"{shot_prefix}-1-first-question")
                await page.get_by_role("button", name="Accept", exact=True).click()
                await expect(page.locator("#outcome")).to_contain_text("by lead", timeout=RESUME_MS)
                second = await _next_round(site, call["id"], after_round=1)
                assert [p["key"] for p in second["pending"]] == ["confirm"], second
                await page.close()
        # The first console process was killed (SIGKILL) with the task waiting for its second answer.
        with console_process(sqlite_url, tmp_path / "console.txt") as base:
            async with httpx.AsyncClient(base_url=base, timeout=60) as api:
                site = Site(base, tokens, api, sqlite_url)
                page = await new_page(browser, base)
                await sign_in(page, "lead", go=f"/runs/{call['run_id']}")
                await expect(page.locator(f"#progress-{call['id']}")).to_contain_text(
                    "task input required: waiting for confirm"
                )
                await page.goto("/")
                await page.get_by_role("link", name="Provision search now?").click()
                await page.get_by_label("Provision now").check()
                await page.get_by_role("button", name="Accept", exact=True).click()
                outcome = page.locator("#outcome")
                await expect(outcome.locator(".result")).to_have_text(
                    "provisioned search in us-east", timeout=RESUME_MS
                )
                await shoot(page, f"{shot_prefix}-2-completed-after-restart")
                done = await site.get_call(call["id"])
    assert done["status"] == "completed"
    assert done["round"] == 2
    updates = [r for r in read_log(log) if r["method"] == "tasks/update"]
    assert len(updates) == 2  # each answer sent once, the second by the second process


async def _next_round(site: Site, call_id: str, *, after_round: int) -> dict[str, Any]:
    response = await site.api.get(
        f"/api/v1/calls/{call_id}",
        params={"wait": WAIT, "after_round": after_round},
        headers=site.auth("dev"),
    )
    assert response.status_code in (200, 202), response.text
    body: dict[str, Any] = response.json()
    return body
