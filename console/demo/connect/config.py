"""The connect demo's configuration (from the environment) and everything it remembers, in memory only."""

from __future__ import annotations

import hmac
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

SERVER_NAME = "connect-demo"
TRACKER = "Example Tracker"
MIN_KEY_LENGTH = 32
DEFAULT_TTL_SECONDS = 3600.0
CONNECT_PATH = "/connect/start"
MCP_PATH = "/mcp"


class ConfigError(Exception):
    """The environment does not allow the server to start."""


@dataclass(frozen=True)
class User:
    name: str
    token: str
    password: str


@dataclass(frozen=True)
class Config:
    key: bytes
    users: tuple[User, ...]
    ttl_seconds: float
    public_url: str | None = None

    def user_by_token(self, token: str) -> User | None:
        found = None
        for user in self.users:  # compare against every token, so timing says nothing about which
            if hmac.compare_digest(user.token.encode(), token.encode()):
                found = user
        return found

    def sign_in(self, name: str, password: str) -> User | None:
        found = None
        for user in self.users:
            name_ok = hmac.compare_digest(user.name.encode(), name.encode())
            password_ok = hmac.compare_digest(user.password.encode(), password.encode())
            if name_ok and password_ok:
                found = user
        return found


@dataclass
class Flow:
    user: str
    exp: float


@dataclass
class Store:
    """Everything the demo remembers, in memory only."""

    flows: dict[str, Flow] = field(default_factory=dict)
    connections: set[str] = field(default_factory=set)
    connect_requests: int = 0


def parse_users(raw: str) -> tuple[User, ...]:
    users: list[User] = []
    for entry in (part.strip() for part in raw.split(",")):
        if not entry:
            continue
        name, _, rest = entry.partition(":")
        token, _, password = rest.partition(":")
        name, token = name.strip(), token.strip()
        if not (name and token and password):
            raise ConfigError("CONNECT_USERS entries must look like name:token:password")
        users.append(User(name=name, token=token, password=password))
    if not users:
        raise ConfigError("CONNECT_USERS must name at least one user as name:token:password")
    if len({u.name for u in users}) != len(users) or len({u.token for u in users}) != len(users):
        raise ConfigError("CONNECT_USERS must not repeat a user name or a token")
    return tuple(users)


def parse_public_url(raw: str | None) -> str | None:
    if raw is None:
        return None
    parts = urlsplit(raw.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise ConfigError(f"--public-url must be an http(s) base URL, got {raw!r}")
    return raw.strip().rstrip("/")


def load_config(env: Mapping[str, str], public_url: str | None = None) -> Config:
    key = env.get("CONNECT_STATE_KEY", "")
    if len(key) < MIN_KEY_LENGTH:
        raise ConfigError(f"CONNECT_STATE_KEY must be set and at least {MIN_KEY_LENGTH} characters long")
    users = parse_users(env.get("CONNECT_USERS", ""))
    raw_ttl = env.get("CONNECT_STATE_TTL", "").strip()
    try:
        ttl = float(raw_ttl) if raw_ttl else DEFAULT_TTL_SECONDS
    except ValueError:
        raise ConfigError(f"CONNECT_STATE_TTL must be a number of seconds, got {raw_ttl!r}") from None
    if not math.isfinite(ttl) or ttl <= 0:
        raise ConfigError("CONNECT_STATE_TTL must be a positive, finite number of seconds")
    return Config(key=key.encode(), users=users, ttl_seconds=ttl, public_url=parse_public_url(public_url))
