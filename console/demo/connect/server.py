"""The connect demo server as one ASGI app on one port (MCP at /mcp, the tracker's pages beside it),
and its command line.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import sys
from collections.abc import Sequence
from urllib.parse import urlsplit

import anyio
from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from console.demo.connect.config import MCP_PATH, SERVER_NAME, Config, ConfigError, Store, load_config
from console.demo.connect.pages import web_routes
from console.demo.connect.tool import bearer_token, build_server
from console.listening import serve_and_announce


class Gate:
    """Outermost ASGI layer: counts /connect requests and refuses MCP requests without a known token."""

    def __init__(self, app: ASGIApp, config: Config, store: Store) -> None:
        self.app = app
        self.config = config
        self.store = store

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path: str = scope["path"]
            if path == "/connect" or path.startswith("/connect/"):
                self.store.connect_requests += 1
            if path == MCP_PATH or path.startswith(MCP_PATH + "/"):
                token = bearer_token(Headers(scope=scope))
                if token is None or self.config.user_by_token(token) is None:
                    response = JSONResponse(
                        {"error": "invalid_token", "error_description": "a valid bearer token is required"},
                        status_code=401,
                        headers={"WWW-Authenticate": f'Bearer realm="{SERVER_NAME}"'},
                    )
                    await response(scope, receive, send)
                    return
        await self.app(scope, receive, send)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def transport_security(config: Config, host: str) -> TransportSecuritySettings:
    """DNS-rebinding check: loopback binds admit loopback hosts (and --public-url's) only."""
    if not _is_loopback(host):
        # Reachable from elsewhere under names we cannot know; the bearer token still guards /mcp.
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    hosts = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
    origins = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
    if config.public_url is not None:
        public = urlsplit(config.public_url)
        hosts.append(public.netloc)
        origins.append(f"{public.scheme}://{public.netloc}")
    return TransportSecuritySettings(allowed_hosts=hosts, allowed_origins=origins)


def build_app(config: Config, store: Store, host: str = "127.0.0.1") -> ASGIApp:
    server = build_server(config, store)
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        host=host,
        transport_security=transport_security(config, host),
        custom_starlette_routes=web_routes(config, store),
    )
    return Gate(app, config, store)


# --- serving ------------------------------------------------------------------------------


async def serve(config: Config, host: str, port: int) -> None:
    await serve_and_announce(build_app(config, Store(), host), host, port, MCP_PATH)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m console.demo.connect",
        description="Demo MCP server whose tool needs a third-party account linked through URL mode.",
    )
    parser.add_argument("--port", type=int, default=0, help="port to listen on (0 = any free port)")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument(
        "--public-url",
        metavar="URL",
        help="external base URL for connect links (default: the host the MCP client used)",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        config = load_config(os.environ, args.public_url)
    except ConfigError as exc:
        sys.stderr.write(f"connect: refusing to start: {exc}\n")
        return 2
    try:
        anyio.run(serve, config, args.host, args.port)
    except KeyboardInterrupt:  # Ctrl+C at the terminal reaches `console demo` and this child alike
        return 130
    return 0
