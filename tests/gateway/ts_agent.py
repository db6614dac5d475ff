"""The TypeScript SDK v2 client as a scripted agent: tests/gateway/ts/agent.mjs, with its npm packages
installed by `npm ci` on first use. Without Node.js the tests skip, unless CONSOLE_REQUIRE_TS_SDK=1."""

from __future__ import annotations

from pathlib import Path

from tests.npm import npm_ci

FOLDER = Path(__file__).resolve().parent / "ts"


def install(negotiation: str) -> list[str]:
    """The command that starts the agent (its URL and token follow); `negotiation` is the SDK's mode:
    `auto` (2026-07-28 with a server that speaks it) or `legacy` (its default: initialize, 2025-11-25)."""
    node = npm_ci(FOLDER, needed_for="to run the TypeScript SDK agent", require_env="CONSOLE_REQUIRE_TS_SDK")
    return [node, str(FOLDER / "agent.mjs"), negotiation]
