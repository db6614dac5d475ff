"""Servers' header and environment values, sealed at rest like per-user credentials (AES-GCM under the key
derived from CONSOLE_SECRET_KEY, `CredentialCipher`).

A stored map is `{name: {"sealed": "<base64>"}}`. Each value is bound to its server, kind and name, so a
value copied onto another server or name does not open. A plain string value is how earlier versions
stored it: it is still read, and sealed on the first start (or `console migrate`) that has the key.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit import SYSTEM, record_event
from console.config import Settings, secret_text
from console.identity.credentials import CredentialCipher
from console.identity.oidc_client import ProviderConfig
from console.mcp.models import McpServer

NO_KEY = "set CONSOLE_SECRET_KEY to store header or environment values (they are kept encrypted)"
Stored = Mapping[str, object]  # name -> {"sealed": ...}, or a plain string from an earlier version


@dataclass(frozen=True)
class Outbound:
    """What reaching a server needs from the settings: the key that opens its stored values, whether
    servers that are not internal may be on private addresses too, and the single sign-on provider that
    enterprise-managed authorization exchanges people's ID tokens at (None without one)."""

    cipher: CredentialCipher
    allow_private: bool = False
    sso: ProviderConfig | None = None

    @classmethod
    def of(cls, settings: Settings) -> Outbound:
        cipher = _cipher_of(secret_text(settings))
        return cls(cipher, settings.allow_private_server_urls, ProviderConfig.of(settings))

    def public_only(self, server: McpServer) -> bool:
        """Whether what is sent for `server` (its requests, its OAuth) may reach public addresses only."""
        return not (server.internal or self.allow_private)


@lru_cache(maxsize=8)
def _cipher_of(console_secret: str | None) -> CredentialCipher:
    """The cipher of a console secret, derived once: every call and send asks for it."""
    return CredentialCipher(console_secret)


def stored_map(text: str | None) -> dict[str, object]:
    found = json.loads(text or "{}")
    return found if isinstance(found, dict) else {}


def seal_value(cipher: CredentialCipher, server_id: str, kind: str, name: str, value: str) -> dict[str, str]:
    """One value as it is stored, bound to its server, kind ("env" or "header") and name.

    Raises:
        SecretMissing: no console secret.
    """
    return {"sealed": cipher.seal_bound(value, _binding(server_id, kind, name))}


def open_values(cipher: CredentialCipher, server_id: str, kind: str, stored: Stored) -> dict[str, str]:
    """The plain values of a stored map.

    Raises:
        SecretMissing: a value is sealed and there is no key, or another key sealed it.
    """
    plain: dict[str, str] = {}
    for name, value in stored.items():
        if isinstance(value, dict):
            plain[name] = cipher.open_bound(str(value.get("sealed", "")), _binding(server_id, kind, name))
        else:
            plain[name] = str(value)
    return plain


def seal_plain(cipher: CredentialCipher, server_id: str, kind: str, stored: Stored) -> dict[str, object]:
    """The stored map with every plain value sealed (sealed ones as they are).

    Raises:
        SecretMissing: there is a plain value and no console secret.
    """
    return {
        name: value if isinstance(value, dict) else seal_value(cipher, server_id, kind, name, str(value))
        for name, value in stored.items()
    }


async def seal_plain_values(*, session: AsyncSession, cipher: CredentialCipher) -> list[str]:
    """Seal the values earlier versions stored in plain text (nothing without a key); the servers sealed."""
    if not cipher.ready:
        return []
    sealed: list[str] = []
    for server in (await session.execute(select(McpServer))).scalars():
        env, headers = stored_map(server.env_json), stored_map(server.headers_json)
        if all(isinstance(v, dict) for v in (*env.values(), *headers.values())):
            continue
        server.env_json = json.dumps(seal_plain(cipher, server.id, "env", env))
        server.headers_json = json.dumps(seal_plain(cipher, server.id, "header", headers))
        record_event(
            session=session,
            actor=SYSTEM,
            action="server_values_sealed",
            subject_type="server",
            subject_id=server.id,
            payload={"name": server.name, "env_names": sorted(env), "header_names": sorted(headers)},
        )
        sealed.append(server.name)
    return sealed


@dataclass(frozen=True)
class OAuthClientEntry:
    """An OAuth client an admin registered for a server by hand: its id, and its secret or the private key
    it signs JWT assertions with (a team account's client credentials), or the file where the platform
    keeps the console's workload identity token (a JWT, presented as the grant itself). With `enterprise`,
    people's grants come from enterprise-managed authorization (console/oauth/enterprise.py) and the
    client authenticates with its secret."""

    client_id: str
    secret: str | None = None
    private_key: str | None = None
    workload_token_file: str | None = None
    enterprise: bool = False


def seal_oauth_client(cipher: CredentialCipher, server_id: str, entry: OAuthClientEntry) -> str:
    """`mcp_server.oauth_client_json` for the entry, its secret and key sealed.

    Raises:
        SecretMissing: a secret or key and no console secret.
    """
    sealed = {
        name: seal_value(cipher, server_id, "oauth", name, value) if value else None
        for name, value in (("client_secret", entry.secret), ("private_key", entry.private_key))
    }
    workload = {"workload_token_file": entry.workload_token_file} if entry.workload_token_file else {}
    enterprise = {"enterprise": True} if entry.enterprise else {}
    return json.dumps({"client_id": entry.client_id, **sealed, **workload, **enterprise})


def open_oauth_client(cipher: CredentialCipher, server: McpServer) -> OAuthClientEntry | None:
    """The OAuth client an admin entered for the server, or None.

    Raises:
        SecretMissing: its secret or key cannot be opened.
    """
    if not server.oauth_client_json:
        return None
    stored = json.loads(server.oauth_client_json)
    sealed = {name: stored.get(name) for name in ("client_secret", "private_key") if stored.get(name)}
    plain = open_values(cipher, server.id, "oauth", sealed)
    workload = stored.get("workload_token_file")
    return OAuthClientEntry(
        str(stored["client_id"]),
        plain.get("client_secret"),
        plain.get("private_key"),
        workload if isinstance(workload, str) else None,
        stored.get("enterprise") is True,
    )


def _binding(server_id: str, kind: str, name: str) -> str:
    return f"server:{server_id}:{kind}:{name}"
