"""The reference everything-server of the MCP project (npm `@modelcontextprotocol/server-everything`, on
the TypeScript SDK 1.x: MCP 2025-11-25 only), pinned by tests/mcp/npm_everything/package-lock.json and
installed with `npm ci` on first use. Without Node.js the tests using it skip, unless
CONSOLE_REQUIRE_NPM_SERVERS=1 (CI) makes that a failure."""

from __future__ import annotations

from pathlib import Path

from tests.harness import ServerSpec
from tests.npm import npm_ci

FOLDER = Path(__file__).resolve().parent / "npm_everything"
ENTRY = FOLDER / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"


def stdio_server() -> ServerSpec:
    """The server over stdio, installed first if needed."""
    node = npm_ci(
        FOLDER, needed_for="to run the npm everything-server", require_env="CONSOLE_REQUIRE_NPM_SERVERS"
    )
    return ServerSpec(command=[node, str(ENTRY), "stdio"])
