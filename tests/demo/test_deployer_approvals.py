"""The demo deployer with DEPLOY_REQUIRE_APPROVAL_JWKS, called directly with the SDK's Client: a production
deploy happens only with an approval attestation of the console's key (published as a JWK set) for exactly
this call, issued by that console for this very server, approved at the gate by two people other than the
requester, once; staging needs none."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from mcp import Client

from console.attestation import APPROVAL_META, Attester, Decision, Question, jwks
from console.db import utcnow
from tests.processes import serving_keys, start_http_server

pytestmark = pytest.mark.anyio

PRODUCTION = {"service": "billing", "environment": "production"}
CONSOLE_KEY = Attester(Ed25519PrivateKey.generate())
ISSUER = "http://console.test"


@pytest.fixture(scope="module")
def deployer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The deployer over HTTP: the audience it checks is its own URL, as the console registers it."""
    with serving_keys(jwks(CONSOLE_KEY.public_jwk())) as jwks_url:
        env = {
            "DEPLOY_STATE_KEY": secrets.token_urlsafe(32),
            "DEPLOY_REQUIRE_APPROVAL_JWKS": jwks_url,
            "DEPLOY_APPROVAL_ISSUER": ISSUER,
        }
        argv = [sys.executable, "-m", "console.demo.deployer"]
        with start_http_server(argv, env, tmp_path_factory.mktemp("deployer") / "server.txt") as server:
            yield server.url


def by(*names: str) -> tuple[Decision, ...]:
    now = utcnow()
    return tuple(Decision(name, "cosign" if n else "accept", now) for n, name in enumerate(names))


def attestation(
    arguments: dict[str, Any],
    audience: str,
    *,
    key: Attester = CONSOLE_KEY,
    minutes: float = 10,
    issuer: str = ISSUER,
    kind: str = "gate",
    decisions: tuple[Decision, ...] | None = None,
) -> dict[str, Any]:
    """What the console sends after lead and ops approved dev's call at its gate (unless told otherwise)."""
    now = utcnow()
    token = key.sign(
        issuer=issuer,
        audience=audience,
        call_id="call-1",
        server="deployer",
        method="tools/call",
        params={"name": "deploy", "arguments": arguments},
        kind=kind,
        requester="dev",
        questions=[Question("gate" if kind == "gate" else "target", 2, decisions or by("lead", "ops"))],
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

    approved = attestation(PRODUCTION, deployer)
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
        (lambda url: attestation({**PRODUCTION, "service": "auth-service"}, url), "arguments"),
        (
            lambda url: attestation(PRODUCTION, url, key=Attester(Ed25519PrivateKey.generate())),
            "is not among the console's keys",
        ),
        (lambda url: attestation(PRODUCTION, url, minutes=-5), "expired"),
        (
            lambda url: attestation(PRODUCTION, "urn:approval-console:server:hostile"),
            "is for the audience 'urn:approval-console:server:hostile', not 'http://127.0.0.1:",
        ),
        (
            lambda url: attestation(PRODUCTION, url, issuer="http://other-console.test"),
            "issued by 'http://other-console.test', not 'http://console.test'",
        ),
        (
            lambda url: attestation(PRODUCTION, url, decisions=by("lead")),
            "records 1 approver (lead) besides the requester dev; 2 are required",
        ),
        (
            lambda url: attestation(PRODUCTION, url, decisions=by("dev", "lead")),
            "records 1 approver (lead) besides the requester dev; 2 are required",
        ),
        (
            lambda url: attestation(PRODUCTION, url, kind="answer"),
            "records an answer to the server's question, not an approval at the console's gate",
        ),
    ],
    ids=[
        "for other arguments",
        "another key",
        "expired",
        "a same-named server elsewhere",
        "another console",
        "one approver",
        "the requester and one approver",
        "an answer where a gate approves",
    ],
)
async def test_an_attestation_for_anything_else_is_refused(
    deployer: str, signed: Callable[[str], dict[str, Any]], why: str
) -> None:
    refused, said = await deploy(deployer, PRODUCTION, signed(deployer))
    assert refused
    assert why in said


async def test_staging_needs_no_attestation(deployer: str) -> None:
    staging = {"service": "billing", "environment": "staging"}
    assert await deploy(deployer, staging) == (False, "billing 2.4.1 is being deployed to staging.")


def refused_start(env: dict[str, str], *argv: str) -> str:
    """What the deployer says when it refuses to start (exit status 2) with `env` added."""
    started = subprocess.run(
        [sys.executable, "-m", "console.demo.deployer", *argv],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert started.returncode == 2, started.stderr
    return started.stderr.strip()


def test_without_an_issuer_or_an_audience_the_deployer_refuses_to_start(state_key: str) -> None:
    keys = {"DEPLOY_STATE_KEY": state_key, "DEPLOY_REQUIRE_APPROVAL_JWKS": "https://keys.example/keys.json"}
    assert refused_start(keys) == (
        "deployer: refusing to start: set DEPLOY_APPROVAL_ISSUER: DEPLOY_REQUIRE_APPROVAL_JWKS does not end "
        "with /.well-known/jwks.json"
    )
    stdio = {**keys, "DEPLOY_APPROVAL_ISSUER": ISSUER, "APPROVAL_CONSOLE_AUDIENCE": ""}
    assert refused_start(stdio) == (
        "deployer: refusing to start: set DEPLOY_APPROVAL_AUDIENCE: the console gave no "
        "APPROVAL_CONSOLE_AUDIENCE (it gives it to the stdio servers it starts)"
    )


async def test_a_deployer_told_its_audience_accepts_only_attestations_for_it(
    tmp_path: Path, state_key: str
) -> None:
    with serving_keys(jwks(CONSOLE_KEY.public_jwk())) as jwks_url:
        env = {
            "DEPLOY_STATE_KEY": state_key,
            "DEPLOY_REQUIRE_APPROVAL_JWKS": jwks_url,
            "DEPLOY_APPROVAL_ISSUER": ISSUER,
            "DEPLOY_APPROVAL_AUDIENCE": "https://deploy.example/mcp",
        }
        argv = [sys.executable, "-m", "console.demo.deployer"]
        with start_http_server(argv, env, tmp_path / "server.txt") as server:
            refused, said = await deploy(server.url, PRODUCTION, attestation(PRODUCTION, server.url))
            assert refused
            assert "not 'https://deploy.example/mcp'" in said
            approved = attestation(PRODUCTION, "https://deploy.example/mcp")
            assert await deploy(server.url, PRODUCTION, approved) == (
                False,
                "billing 2.4.1 is being deployed to production.",
            )


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
