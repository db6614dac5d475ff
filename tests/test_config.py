"""Settings refuse sign-in and proxy configurations that cannot work or are unsafe."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from console.config import Settings


@pytest.mark.parametrize(
    "values",
    [
        {"oidc_issuer": "https://id.example.com"},
        {"oidc_client_id": "console"},
        {"oidc_issuer": "http://id.example.com", "oidc_client_id": "console"},
        {"oidc_issuer": "ftp://id.example.com", "oidc_client_id": "console"},
        {"oidc_issuer": "https://id.example.com?x=1", "oidc_client_id": "console"},
        {"local_sign_in": False},
    ],
)
def test_unusable_sign_in_settings_are_refused(values: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        Settings(**values)


@pytest.mark.parametrize(
    "issuer", ["https://id.example.com/realms/x", "http://127.0.0.1:8080", "http://localhost:9"]
)
def test_https_and_loopback_issuers_are_accepted(issuer: str) -> None:
    settings = Settings(oidc_issuer=issuer, oidc_client_id="console", local_sign_in=False)
    assert settings.oidc_enabled
    assert not Settings().oidc_enabled


def test_trusted_proxies_are_addresses_or_networks_and_none_by_default() -> None:
    with pytest.raises(ValidationError, match="'proxy.internal' is not an IP address or CIDR network"):
        Settings(trusted_proxies="10.0.0.1,proxy.internal")
    with pytest.raises(ValidationError, match="has host bits set"):
        Settings(trusted_proxies="10.1.2.3/16")
    assert Settings(trusted_proxies=" 10.0.0.1 , fd00::/8 ,").trusted_proxy_list == ["10.0.0.1", "fd00::/8"]
    assert Settings().trusted_proxy_list == []


@pytest.mark.parametrize(
    ("written", "used"),
    [
        ("sqlite:///console.db", "sqlite+aiosqlite:///console.db"),
        ("sqlite:////var/lib/console/console.db", "sqlite+aiosqlite:////var/lib/console/console.db"),
        ("sqlite+aiosqlite:///console.db", "sqlite+aiosqlite:///console.db"),
        ("postgresql://app:p%40ss@db:5432/console", "postgresql+psycopg://app:p%40ss@db:5432/console"),
        ("postgres://app@db/console", "postgresql+psycopg://app@db/console"),
        ("postgresql+asyncpg://app@db/console", "postgresql+psycopg://app@db/console"),
        (" postgresql+psycopg://app@db/console ", "postgresql+psycopg://app@db/console"),
    ],
)
def test_database_urls_as_people_write_them_use_the_consoles_drivers(written: str, used: str) -> None:
    assert Settings(database_url=written).database_url == used


@pytest.mark.parametrize(
    ("written", "error"),
    [
        ("console.db", "not a database URL: write sqlite:///path/to/console.db or postgresql://"),
        (
            "mysql://app@db/console",
            "mysql is not supported: the console keeps its data in SQLite or PostgreSQL",
        ),
    ],
)
def test_a_database_url_the_console_cannot_use_is_refused_saying_what_to_write(
    written: str, error: str
) -> None:
    with pytest.raises(ValidationError, match=error):
        Settings(database_url=written)
