"""The connect demo's stand-in third-party pages: the Example Tracker's own sign-in, which links accounts.

The page enforces the protocol's same-user rule itself: only the MCP user whose call made the flow may
complete it. `/stats` tells tests how often a `/connect` page was fetched and who is connected.
"""

from __future__ import annotations

import hmac
import html
import time

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from console.demo.connect.config import CONNECT_PATH, TRACKER, Config, Flow, Store
from console.demo.connect.state import flow_id_is_genuine

PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def page(title: str, body: str, status_code: int = 200) -> HTMLResponse:
    """A whole HTML page; `body` must already be escaped markup."""
    document = (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)} · {TRACKER}</title>"
        "<style>body{font-family:sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem}"
        "label{display:block;margin:.8rem 0}input{display:block;width:100%}</style></head>"
        f"<body><h1>{html.escape(TRACKER)}</h1>\n{body}\n</body></html>\n"
    )
    return HTMLResponse(document, status_code=status_code, headers=PAGE_HEADERS)


def sign_in_form(flow_id: str, error: str | None = None) -> str:
    notice = f'<p role="alert"><strong>{html.escape(error)}</strong></p>' if error else ""
    return (
        "<h2>Sign in to connect your account</h2>\n"
        "<p>An agent asks to create issues in the Example Tracker on your behalf. Sign in with "
        "your Example Tracker account to allow it.</p>\n"
        f"{notice}\n"
        f'<form method="post" action="{CONNECT_PATH}">'
        f'<input type="hidden" name="flow" value="{html.escape(flow_id)}">'
        '<label>User name <input name="username" autocomplete="username" required></label>'
        '<label>Password <input name="password" type="password" autocomplete="current-password" '
        "required></label>"
        '<button type="submit">Sign in and connect</button></form>'
    )


def invalid_link() -> HTMLResponse:
    return page("Invalid link", "<p>This connect link is not valid or has expired.</p>", 404)


def live_flow(config: Config, store: Store, flow_id: str) -> Flow | None:
    if not flow_id_is_genuine(config.key, flow_id):
        return None
    flow = store.flows.get(flow_id)
    if flow is None or time.time() >= flow.exp:
        return None
    return flow


def web_routes(config: Config, store: Store) -> list[Route]:
    async def connect_form(request: Request) -> Response:
        flow_id = request.query_params.get("flow", "")
        if live_flow(config, store, flow_id) is None:
            return invalid_link()
        return page("Connect", sign_in_form(flow_id))

    async def connect_submit(request: Request) -> Response:
        form = await request.form()
        flow_id, name, password = (str(form.get(k, "")) for k in ("flow", "username", "password"))
        flow = live_flow(config, store, flow_id)
        if flow is None:
            return invalid_link()
        user = config.sign_in(name, password)
        if user is None:
            return page("Connect", sign_in_form(flow_id, "Wrong user name or password."), 401)
        # The same-user rule: only the MCP user whose call made this flow may complete it.
        if not hmac.compare_digest(user.name.encode(), flow.user.encode()):
            return page(
                "Wrong user",
                "<p>This connect link was made for another user.</p>"
                "<p>Nothing was connected. Ask the person whose agent made the request to open it.</p>",
                403,
            )
        store.connections.add(user.name)
        return page(
            "Connected",
            f"<p>Connected. You can go back to the console.</p><p>Signed in as {html.escape(user.name)}.</p>",
        )

    async def stats(request: Request) -> Response:
        return JSONResponse(
            {"connect_requests": store.connect_requests, "connections": sorted(store.connections)}
        )

    return [
        Route(CONNECT_PATH, connect_form, methods=["GET"]),
        Route(CONNECT_PATH, connect_submit, methods=["POST"]),
        Route("/stats", stats, methods=["GET"]),
    ]
