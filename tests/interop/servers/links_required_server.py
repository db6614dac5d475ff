"""Test MCP server "links-required": protocol 2025-11-25, built with the official `mcp` 1.x SDK (FastMCP); its
tools answer with URLElicitationRequiredError (-32042) until a link was completed.

It runs under the cached mcp 1.30 environment of tests/interop/foreign.py (`python_env("mcp-1.30")`), over
stdio. The link's site is a stand-in: the test completes a link by writing its elicitationId as a line of
the file LINK_DONE_FILE names, as a site would record its user finishing there.

Tools:
    read_files(path)    -32042 with one link ("Authorize access to your files",
                        https://files.example/authorize/<id>) until <id> was completed, then
                        "contents of <path>"; each server process asks for one link id
    read_mail(folder)   as read_files, for the link "Authorize access to your mail" (id mail-<...>); once the
                        site completed it, the server says so (notifications/elicitation/complete)
    always_required()   -32042 with the link "always-<n>" whatever was completed (a server that never lets go)
    hostile(kind)       a -32042 error the console must refuse: "javascript" (a javascript: URL), "huge"
                        (1000 links), "malformed" (data.elicitations is a string), "no_id" (a link without
                        an elicitationId)
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from pathlib import Path
from typing import Any

from mcp.server.fastmcp import Context, FastMCP
from mcp.server.session import ServerSession
from mcp.shared.exceptions import UrlElicitationRequiredError
from mcp.types import URL_ELICITATION_REQUIRED, ElicitRequestURLParams, ErrorData

server = FastMCP("links-required")
LINK_ID = f"files-{uuid.uuid4().hex}"
MAIL_ID = f"mail-{uuid.uuid4().hex}"
WATCHING: set[asyncio.Task[None]] = set()
ALWAYS: list[int] = [0]


def completed() -> set[str]:
    done = Path(os.environ["LINK_DONE_FILE"])
    return set(done.read_text().split()) if done.exists() else set()


@server.tool()
def read_files(path: str) -> str:
    """Reads files once the user authorized access at the link."""
    if LINK_ID not in completed():
        raise UrlElicitationRequiredError(
            [
                ElicitRequestURLParams(
                    mode="url",
                    message="Authorize access to your files",
                    url=f"https://files.example/authorize/{LINK_ID}",
                    elicitationId=LINK_ID,
                )
            ]
        )
    return f"contents of {path}"


@server.tool()
def read_mail(folder: str, ctx: Context) -> str:  # type: ignore[type-arg]
    """Reads mail once the user authorized access at the link, and says when they did."""
    if MAIL_ID in completed():
        return f"mail in {folder}"
    if not WATCHING:
        watching = asyncio.get_running_loop().create_task(say_when_done(ctx.session, MAIL_ID))
        WATCHING.add(watching)
    link = ElicitRequestURLParams(
        mode="url",
        message="Authorize access to your mail",
        url=f"https://mail.example/authorize/{MAIL_ID}",
        elicitationId=MAIL_ID,
    )
    raise UrlElicitationRequiredError([link])


async def say_when_done(session: ServerSession, elicitation_id: str) -> None:
    """As the site would tell the server: the user finished there (looked for a minute at most)."""
    for _ in range(600):
        if elicitation_id in completed():
            await session.send_elicit_complete(elicitation_id)
            return
        await asyncio.sleep(0.1)


@server.tool()
def always_required() -> str:
    """Requires a link every time."""
    ALWAYS[0] += 1
    link = ElicitRequestURLParams(
        mode="url",
        message="Authorize again",
        url="https://files.example/again",
        elicitationId=f"always-{ALWAYS[0]}",
    )
    raise UrlElicitationRequiredError([link])


def _link(url: str, **extra: Any) -> dict[str, Any]:
    return {"mode": "url", "message": "Open this", "url": url, "elicitationId": "evil-1", **extra}


HOSTILE: dict[str, Any] = {
    "javascript": {"elicitations": [_link("javascript:alert(document.cookie)")]},
    "huge": {"elicitations": [_link(f"https://files.example/{n}") for n in range(1000)]},
    "malformed": {"elicitations": "open https://files.example now"},
    "no_id": {"elicitations": [{"mode": "url", "message": "Open this", "url": "https://files.example/x"}]},
}


@server.tool()
def hostile(kind: str) -> str:
    """Answers with a -32042 error the client must not trust."""
    refused = UrlElicitationRequiredError([])
    refused.error = ErrorData(code=URL_ELICITATION_REQUIRED, message="links required", data=HOSTILE[kind])
    raise refused


if __name__ == "__main__":
    server.run("stdio")
    sys.exit(0)
