"""Discovery against hostile or broken servers: every document is capped before it is read, and what does
not check out is refused with a reason, before anything is sent to an authorization server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler

import pytest

from console.mcp.challenge import Challenge
from console.oauth.discovery import discover
from console.oauth.errors import OAuthRefused
from console.oauth.http import MAX_BODY_BYTES, Reach
from console.oauth.resource_indicator import ResourceIndicator
from tests.processes import serving_in_thread

pytestmark = pytest.mark.anyio

Documents = dict[str, tuple[int, bytes]]


@contextmanager
def serving(documents: Documents) -> Iterator[str]:
    """A real HTTP server on loopback answering GETs from `documents` (404 for the rest); its base URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # the standard library's name
            status, body = documents.get(self.path, (404, b"{}"))
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    with serving_in_thread(Handler) as base:
        yield base


def metadata(base: str, **fields: object) -> bytes:
    document = {
        "issuer": base,
        "authorization_endpoint": f"{base}/authorize",
        "token_endpoint": f"{base}/token",
        "code_challenge_methods_supported": ["S256"],
        **fields,
    }
    return json.dumps(document).encode()


def resource(base: str, **fields: object) -> bytes:
    return json.dumps({"resource": f"{base}/mcp", "authorization_servers": [base], **fields}).encode()


async def refused(documents: Documents, base: str, challenge: Challenge | None = None) -> str:
    async with Reach(public_only=False).client() as http:
        with pytest.raises(OAuthRefused) as caught:
            await discover(http, f"{base}/mcp", challenge)
    return caught.value.reason


async def test_a_document_over_the_cap_is_refused_unread() -> None:
    documents: Documents = {}
    with serving(documents) as base:
        documents["/.well-known/oauth-protected-resource/mcp"] = (200, b" " * (MAX_BODY_BYTES + 1) + b"{}")
        assert await refused(documents, base) == "unreachable"


async def test_documents_that_are_not_json_objects_are_refused() -> None:
    documents: Documents = {}
    with serving(documents) as base:
        documents["/.well-known/oauth-protected-resource/mcp"] = (200, b"[1, 2]")
        assert await refused(documents, base) == "invalid_document"
        documents["/.well-known/oauth-protected-resource/mcp"] = (200, b"not json")
        assert await refused(documents, base) == "invalid_document"


async def test_a_server_error_during_discovery_is_not_taken_for_missing_metadata() -> None:
    documents: Documents = {}
    with serving(documents) as base:
        documents["/.well-known/oauth-protected-resource/mcp"] = (503, b"{}")
        assert await refused(documents, base) == "unreachable"


async def test_metadata_for_another_resource_or_issuer_or_without_pkce_is_refused() -> None:
    documents: Documents = {}
    with serving(documents) as base:
        prm = "/.well-known/oauth-protected-resource/mcp"
        documents[prm] = (200, resource(base, resource="https://elsewhere.example/mcp"))
        assert await refused(documents, base) == "resource_mismatch"
        documents[prm] = (200, resource(base))
        documents["/.well-known/oauth-authorization-server"] = (200, metadata("https://attacker.example"))
        assert await refused(documents, base) == "issuer_mismatch"
        documents["/.well-known/oauth-authorization-server"] = (
            200,
            metadata(base, code_challenge_methods_supported=["plain"]),
        )
        assert await refused(documents, base) == "pkce_unsupported"
        documents["/.well-known/oauth-authorization-server"] = (
            200,
            metadata(base, token_endpoint="ftp://127.0.0.1/token"),  # noqa: S106  # a URL
        )
        assert await refused(documents, base) == "invalid_document"


async def test_the_challenge_scope_wins_and_offline_access_is_added_when_offered() -> None:
    documents: Documents = {}
    with serving(documents) as base:
        hinted = "/custom/prm"
        documents[hinted] = (200, resource(base, scopes_supported=["files:read", "files:write"]))
        documents["/.well-known/oauth-authorization-server"] = (
            200,
            metadata(base, scopes_supported=["files:read", "offline_access"]),
        )
        async with Reach(public_only=False).client() as http:
            asked = await discover(http, f"{base}/mcp", Challenge(401, f"{base}{hinted}", "files:read"))
            listed = await discover(http, f"{base}/mcp", Challenge(401, f"{base}{hinted}"))
        assert asked.scope == "files:read offline_access"
        assert listed.scope == "files:read files:write offline_access"
        assert asked.resource == f"{base}/mcp"
        assert asked.auth_server.issuer == base


async def test_without_resource_the_scopes_asked_are_qualified_by_the_application_id_uri() -> None:
    documents: Documents = {}
    with serving(documents) as base:
        hinted = "/custom/prm"
        documents[hinted] = (200, resource(base, scopes_supported=["files:read", "api://other/x"]))
        documents["/.well-known/oauth-authorization-server"] = (
            200,
            metadata(base, scopes_supported=["openid", "offline_access"]),
        )
        omit = ResourceIndicator("omit", "api://files-app/")
        async with Reach(public_only=False).client() as http:
            asked = await discover(
                http, f"{base}/mcp", Challenge(401, f"{base}{hinted}", "files:write"), omit
            )
            listed = await discover(http, f"{base}/mcp", Challenge(401, f"{base}{hinted}"), omit)
            sent = await discover(http, f"{base}/mcp", Challenge(401, f"{base}{hinted}"))
        assert (asked.omit_resource, asked.scope) == (True, "api://files-app/files:write offline_access")
        assert listed.scope == "api://files-app/files:read api://other/x offline_access"
        assert (sent.omit_resource, sent.scope) == (False, "files:read api://other/x offline_access")


async def test_an_internal_address_is_refused_for_a_server_that_is_not_internal() -> None:
    documents: Documents = {}
    with serving(documents) as base:
        documents["/.well-known/oauth-protected-resource/mcp"] = (200, resource(base))
        async with Reach(public_only=True).client() as http:
            with pytest.raises(OAuthRefused) as caught:
                await discover(http, f"{base}/mcp", None)
        assert caught.value.reason == "unreachable"
        assert "loopback" in caught.value.message
