"""`/.well-known/jwks.json` publishes, to anyone, the keys the console signs approval attestations with:
its own, never the audit key, and the ones it replaced."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives import serialization

from console.app import create_app
from console.attestation import Attester, derived_key, load_private_key
from console.audit.signing import new_private_key_text
from console.config import Settings
from console.errors import ConsoleError
from tests.harness import SECRET_KEY
from tests.test_cli import console_process, one_error_line

pytestmark = pytest.mark.anyio


def settings(tmp_path: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {"env": "test", "secret_key": SECRET_KEY, **overrides}
    return Settings(database_url=f"sqlite+aiosqlite:///{tmp_path / 'unused.db'}", **values)


async def published_keys(tmp_path: Path, **overrides: Any) -> list[dict[str, Any]]:
    """The keys an anonymous client reads from the app built with these settings."""
    app = create_app(settings(tmp_path, **overrides))
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://console.test"
    ) as client:
        response = await client.get("/.well-known/jwks.json")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.headers["cache-control"] == "public, max-age=300"
    body = response.json()
    assert set(body) == {"keys"}
    keys: list[dict[str, Any]] = body["keys"]
    return keys


async def test_jwks_answers_without_sign_in_with_the_key_derived_from_the_secret_key(tmp_path: Path) -> None:
    [key] = await published_keys(tmp_path)
    assert (key["kty"], key["crv"], key["use"], key["alg"]) == ("OKP", "Ed25519", "sig", "EdDSA")
    assert key["kid"] == Attester(derived_key(SECRET_KEY)).key_id
    assert "d" not in key


async def test_jwks_publishes_the_approval_signing_key_when_one_is_set(tmp_path: Path) -> None:
    text = new_private_key_text()
    [key] = await published_keys(
        tmp_path, approval_signing_key=text, audit_signing_key=new_private_key_text()
    )
    assert key["kid"] == Attester(load_private_key(text)).key_id


async def test_jwks_never_publishes_the_audit_signing_key(tmp_path: Path) -> None:
    """A leaked audit key must not let anyone forge approvals: attestations have a key of their own."""
    audit = new_private_key_text()
    [key] = await published_keys(tmp_path, audit_signing_key=audit)
    assert key["kid"] == Attester(derived_key(SECRET_KEY)).key_id != Attester(load_private_key(audit)).key_id
    assert await published_keys(tmp_path, secret_key=None, audit_signing_key=audit) == []


async def test_jwks_is_empty_without_any_key(tmp_path: Path) -> None:
    assert await published_keys(tmp_path, secret_key=None) == []


async def test_jwks_keeps_listing_the_previous_keys_after_a_rotation(tmp_path: Path) -> None:
    current, earlier, older = (new_private_key_text() for _ in range(3))
    earlier_x = Attester(load_private_key(earlier)).public_jwk()["x"]
    older_public = (
        load_private_key(older)
        .public_key()
        .public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    )
    keys = await published_keys(
        tmp_path,
        approval_signing_key=current,
        approval_previous_keys=f" {earlier_x}, {base64.b64encode(older_public).decode()} ,",
    )
    assert [key["kid"] for key in keys] == [
        Attester(load_private_key(text)).key_id for text in (current, earlier, older)
    ]
    assert all("d" not in key for key in keys)


def test_an_approval_signing_key_that_is_the_audit_key_stops_the_app_with_one_line(tmp_path: Path) -> None:
    text = new_private_key_text()
    with pytest.raises(ConsoleError) as refused:
        create_app(settings(tmp_path, approval_signing_key=text, audit_signing_key=text))
    assert refused.value.message == (
        "invalid settings: CONSOLE_APPROVAL_SIGNING_KEY: it is the audit signing key; give approval "
        "attestations a key of their own (`console audit keygen` makes one)"
    )
    key_file = tmp_path / "audit.key"
    key_file.write_text(text + "\n")
    with pytest.raises(ConsoleError, match="it is the audit signing key"):
        create_app(settings(tmp_path, approval_signing_key=text, audit_signing_key_file=str(key_file)))


def test_an_unreadable_previous_key_stops_the_app_with_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConsoleError) as refused:
        create_app(settings(tmp_path, approval_previous_keys=f"{'A' * 43},not a key"))
    assert refused.value.message == (
        "invalid settings: CONSOLE_APPROVAL_PREVIOUS_KEYS: key 2: the key is not base64"
    )


def test_an_unreadable_approval_signing_key_stops_the_app_with_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConsoleError) as refused:
        create_app(settings(tmp_path, approval_signing_key="not a key"))
    assert refused.value.message == (
        "invalid settings: CONSOLE_APPROVAL_SIGNING_KEY: the key is neither PEM nor base64"
    )
    with pytest.raises(ConsoleError) as missing:
        create_app(
            settings(
                tmp_path,
                approval_signing_key=new_private_key_text(),
                audit_signing_key_file=str(tmp_path / "absent.key"),
            )
        )
    assert missing.value.message == (
        "invalid settings: CONSOLE_AUDIT_SIGNING_KEY_FILE: cannot read it (No such file or directory)"
    )
    url = f"sqlite+aiosqlite:///{tmp_path / 'console.db'}"
    done = console_process(
        "serve", "--port", "0", url=url, cwd=tmp_path, CONSOLE_APPROVAL_SIGNING_KEY="A" * 40
    )
    assert one_error_line(done) == (
        "error: invalid settings: CONSOLE_APPROVAL_SIGNING_KEY: the key must be 32 bytes (base64), got 30"
    )
