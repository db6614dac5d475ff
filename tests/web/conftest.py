"""Fixtures of the browser tests (modules marked `browser`): Chromium, screenshots, a fresh SQLite file."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import pytest
from playwright.async_api import Browser

from tests.web.browser import chromium, require_chromium, shoot


@pytest.fixture(autouse=True, scope="module")
def _chromium_installed(request: pytest.FixtureRequest) -> None:
    """In a module marked `browser`: skip (or fail, see require_chromium) before anything is started.

    Module-scoped, so it runs before the module's own module-scoped fixtures (which start processes).
    """
    if request.node.get_closest_marker("browser") is not None:
        require_chromium()


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """Module-scoped here, so that one Chromium serves a module's tests (`launched_chromium`): they run in
    one event loop while it lives."""
    return "asyncio"


@pytest.fixture(scope="module")
async def launched_chromium() -> AsyncIterator[Browser]:
    """One Chromium for a module's tests: starting it (and Playwright) took seconds per test."""
    async with chromium() as launched:
        yield launched


@pytest.fixture
async def browser(
    request: pytest.FixtureRequest, shot_prefix: str, launched_chromium: Browser
) -> AsyncIterator[Browser]:
    """Chromium, whose contexts (each one person's browser: cookies, storage) are closed after the test;
    when the test failed, every page still open is saved first as `<test>-failed-<n>.png`."""
    failed_before = request.session.testsfailed
    yield launched_chromium
    contexts = list(launched_chromium.contexts)
    if request.session.testsfailed > failed_before:
        pages = [page for context in contexts for page in context.pages]
        for n, page in enumerate(pages, start=1):
            await shoot(page, f"{shot_prefix}-failed-{n}")
    for context in contexts:
        await context.close()


@pytest.fixture
def shot_prefix(request: pytest.FixtureRequest) -> str:
    """A file-name-safe prefix for this test's screenshots, e.g. `approve-a-production-deploy-sqlite`."""
    name: str = request.node.name
    return re.sub(r"[^A-Za-z0-9]+", "-", name.removeprefix("test_")).strip("-")
