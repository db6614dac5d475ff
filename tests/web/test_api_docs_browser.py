"""/api/docs in Chromium: Swagger UI from /static lists every operation, offline, under the console's CSP."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Browser, Request, expect

from tests.harness import seed, stdio_deployer
from tests.processes import console_process
from tests.web.browser import Watch, new_page, shoot

pytestmark = [pytest.mark.anyio, pytest.mark.browser]


async def test_api_docs_list_every_operation_offline_without_csp_violations(
    sqlite_url: str, tmp_path: Path, browser: Browser
) -> None:
    with console_process(sqlite_url, tmp_path / "console.txt") as base:
        async with httpx.AsyncClient(base_url=base, timeout=30) as api:
            document = (await api.get("/api/v1/openapi.json")).json()
        operations = sorted(
            f"{method.upper()} {route}" for route, item in document["paths"].items() for method in item
        )
        page = await new_page(browser, base)
        watch = await Watch.install(page)
        elsewhere: list[str] = []

        async def offline(request: Request) -> None:
            if not request.url.startswith((base, "data:")):
                elsewhere.append(request.url)

        page.on("request", offline)
        await page.goto("/api/docs")
        blocks = page.locator(".opblock")
        await expect(blocks).to_have_count(len(operations))
        shown = sorted(
            [
                f"{await block.locator('.opblock-summary-method').inner_text()} "
                f"{await block.locator('.opblock-summary-path').get_attribute('data-path')}"
                for block in await blocks.all()
            ]
        )
        await shoot(page, "api-docs")
        await watch.assert_inert(page, "/api/docs")
    assert shown == operations
    assert elsewhere == []


async def test_api_docs_authorize_with_a_token_and_try_an_operation(
    sqlite_url: str, tmp_path: Path, browser: Browser
) -> None:
    """The document declares the bearer token, so Authorize and Try it out work as a user expects."""
    tokens = await seed(sqlite_url, {"deployer": stdio_deployer("k" * 32)})
    with console_process(sqlite_url, tmp_path / "console.txt") as base:
        page = await new_page(browser, base)
        await page.goto("/api/docs")
        await page.locator(".auth-wrapper .authorize").click()
        await page.locator(".modal-ux input").fill(tokens["dev"])
        await page.locator(".modal-ux .auth-btn-wrapper .authorize").click()
        await page.locator(".modal-ux .btn-done").click()
        servers = page.locator(".opblock", has=page.locator('[data-path="/api/v1/servers"]')).filter(
            has=page.locator(".opblock-summary-method", has_text="GET")
        )
        await servers.locator(".opblock-summary").click()
        await servers.locator(".try-out__btn").click()
        await servers.locator(".execute").click()
        status = servers.locator(".live-responses-table tbody .response-col_status").first
        await expect(status).to_have_text("200")
        body = await servers.locator(
            ".live-responses-table tbody .response-col_description pre"
        ).first.inner_text()
    assert [server["name"] for server in json.loads(body)] == ["deployer"]
