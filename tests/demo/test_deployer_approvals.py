"""The demo deployer with DEPLOY_REQUIRE_APPROVAL_JWKS, called directly with the SDK's Client: a production
deploy happens only with an approval attestation of the console's key (published as a JWK set) for exactly
this call, once; staging needs none."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from mcp import Client

from console.attestation import APPROVAL_META, Approval, Attester, jwks
from console.db import utcnow
from tests.processes import start_http_server

pytestmark = pytest.mark.anyio

PRODUCTION = {"service": "billing", "environment": "production"}
CONSOLE_KEY = Attester(Ed25519PrivateKey.generate())


@contextmanager
def serving_keys(keys: dict[str, Any]) -> Iterator[str]:
    """A plain HTTP server publishing `keys` as the console would (its /.well-known/jwks.json)."""
    body = json.dumps(keys).encode()

    class Keys(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Keys)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/.well-known/jwks.json"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def deployer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serving_keys(jwks(CONSOLE_KEY.public_jwk())) as jwks_url:
        env = {"DEPLOY_STATE_KEY": secrets.token_urlsafe(32), "DEPLOY_REQUIRE_APPROVAL_JWKS": jwks_url}
        argv = [sys.executable, "-m", "console.demo.deployer"]
        with start_http_server(argv, env, tmp_path_factory.mktemp("deployer") / "server.txt") as server:
            yield server.url


def attestation(
    arguments: dict[str, Any], key: Attester = CONSOLE_KEY, minutes: float = 10
) -> dict[str, Any]:
    now = utcnow()
    token = key.sign(
        issuer="http://console.test",
        call_id="call-1",
        server="deployer",
        method="tools/call",
        params={"name": "deploy", "arguments": arguments},
        approvals=[Approval("lead", "accept", now), Approval("ops", "cosign", now)],
        rule="rule-1",
        decided_at=now,
        minutes=minutes,
    )
    return {APPROVAL_META: token}


async def deploy(url: str, arguments: dict[str, Any], meta: dict[str, Any] | None = None) -> tuple[bool, str]:
    async with Client(url) as client:
        result = await client.call_tool("deploy", arguments, meta=meta)  # type: ignore[arg-type]
    return bool(result.is_error), "".join(part.text for part in result.content if part.type == "text")


async def test_production_needs_the_consoles_approval_of_exactly_this_call_once(deployer: str) -> None:
    refused, said = await deploy(deployer, PRODUCTION)
    assert refused
    assert said.startswith("Not deployed: production needs the console's approval (the request carries no")

    approved = attestation(PRODUCTION)
    assert await deploy(deployer, PRODUCTION, approved) == (
        False,
        "billing 2.4.1 is being deployed to production.",
    )
    refused, said = await deploy(deployer, PRODUCTION, approved)  # the same attestation again: a replay
    assert refused
    assert "used already (a replay)" in said


# Signed when the test runs, not when it is collected: a worker may run it long after collection.
@pytest.mark.parametrize(
    ("signed", "why"),
    [
        (lambda: attestation({**PRODUCTION, "service": "auth-service"}), "arguments"),
        (
            lambda: attestation(PRODUCTION, key=Attester(Ed25519PrivateKey.generate())),
            "is not among the console's keys",
        ),
        (lambda: attestation(PRODUCTION, minutes=-5), "expired"),
    ],
    ids=["for other arguments", "another key", "expired"],
)
async def test_an_attestation_for_anything_else_is_refused(
    deployer: str, signed: Callable[[], dict[str, Any]], why: str
) -> None:
    refused, said = await deploy(deployer, PRODUCTION, signed())
    assert refused
    assert why in said


async def test_staging_needs_no_attestation(deployer: str) -> None:
    staging = {"service": "billing", "environment": "staging"}
    assert await deploy(deployer, staging) == (False, "billing 2.4.1 is being deployed to staging.")


def test_an_address_that_is_not_http_refuses_to_start(state_key: str) -> None:
    env = {
        **os.environ,
        "DEPLOY_STATE_KEY": state_key,
        "DEPLOY_REQUIRE_APPROVAL_JWKS": "ftp://keys.example/jwks.json",
    }
    started = subprocess.run(
        [sys.executable, "-m", "console.demo.deployer"], env=env, capture_output=True, text=True, timeout=60
    )
    assert started.returncode == 2
    assert "DEPLOY_REQUIRE_APPROVAL_JWKS must be an http(s) URL" in started.stderr
