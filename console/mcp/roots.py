"""Roots: the `file://` locations a server is told it may work in (MCP `roots/list`).

Team admins set them per server, or once as the team's default for servers that have none of their own
(console/mcp/admin_roots.py). The console answers a server's `roots/list` from them without asking
anyone, and tells a server it offers roots only when it has some. Through 2026-07-28 MCP allows no
other scheme than `file://` (the SDK's own types refuse others), so neither do we.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from console.errors import InvalidInput

MAX_ROOTS = 50
MAX_URI_CHARS = 2048
MAX_NAME_CHARS = 200


@dataclass(frozen=True)
class Root:
    uri: str
    name: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {"uri": self.uri} if self.name is None else {"uri": self.uri, "name": self.name}


def check_root(uri: str, name: str | None = None) -> Root:
    """One root as an admin entered it.

    Raises:
        ValueError: with a sentence saying what is wrong.
    """
    if not uri or len(uri) > MAX_URI_CHARS:
        raise ValueError(f"a root is a file:// URI of at most {MAX_URI_CHARS} characters")
    if any(ord(c) <= 0x20 or ord(c) == 0x7F for c in uri):
        raise ValueError("a root's URI has no spaces or control characters (write a space as %20)")
    try:
        parts = urlsplit(uri)
    except ValueError:
        raise ValueError(f"{uri[:100]!r} is not a URI") from None
    if parts.scheme.lower() != "file" or not uri.lower().startswith("file://"):
        raise ValueError(f"{uri[:100]!r} is not a file:// URI (MCP roots are file:// URIs)")
    if not parts.path.startswith("/") or parts.query or parts.fragment:
        raise ValueError(f"{uri[:100]!r} needs an absolute path and no query or fragment")
    if name is not None:
        name = name.strip()
        if len(name) > MAX_NAME_CHARS or any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
            raise ValueError(f"a root's name is at most {MAX_NAME_CHARS} printable characters")
    return Root(uri, name or None)


def parse_root_lines(text: str) -> list[Root]:
    """Roots written one per line as `URI` or `URI name` (blank lines are skipped).

    Raises:
        InvalidInput: on field `roots`, naming the line that is wrong.
    """
    roots: list[Root] = []
    for number, line in enumerate(text.splitlines(), start=1):
        uri, _, name = line.strip().partition(" ")
        if not uri:
            continue
        try:
            roots.append(check_root(uri, name or None))
        except ValueError as exc:
            raise InvalidInput("invalid roots", {"roots": f"line {number}: {exc}"}) from None
    check_roots(roots)
    return roots


def check_roots(roots: list[Root]) -> None:
    """Raises InvalidInput (field `roots`) for too many roots or one URI listed twice."""
    if len(roots) > MAX_ROOTS:
        raise InvalidInput("invalid roots", {"roots": f"at most {MAX_ROOTS} roots"})
    seen: set[str] = set()
    for root in roots:
        if root.uri in seen:
            raise InvalidInput("invalid roots", {"roots": f"{root.uri[:100]} is listed twice"})
        seen.add(root.uri)


def root_lines(roots: tuple[Root, ...] | list[Root] | None) -> str:
    """The roots as an admin writes them (the inverse of `parse_root_lines`)."""
    return "\n".join(root.uri if root.name is None else f"{root.uri} {root.name}" for root in roots or ())


def dump_roots(roots: list[Root] | tuple[Root, ...] | None) -> str | None:
    return None if roots is None else json.dumps([root.as_json() for root in roots])


def load_roots(text: str | None) -> tuple[Root, ...] | None:
    """Stored roots; None when none are stored (a server then takes its team's default)."""
    if text is None:
        return None
    return tuple(Root(item["uri"], item.get("name")) for item in json.loads(text))


def roots_result(roots: tuple[Root, ...]) -> dict[str, Any]:
    """The `ListRootsResult` that answers a server's `roots/list`."""
    return {"roots": [root.as_json() for root in roots]}
