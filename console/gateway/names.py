"""Names agents see at `/mcp`: `<server>__<name>`, kept inside `[A-Za-z0-9_-]` and 64 characters."""

from __future__ import annotations

import hashlib
import re

SEPARATOR = "__"
MAX_LENGTH = 64  # what model APIs accept for a tool name
_OUTSIDE = re.compile(r"[^A-Za-z0-9_-]")


def gateway_name(server: str, name: str) -> str:
    """The name of a server's tool or prompt among all of a team's; characters model APIs refuse become
    `_`, and a name too long keeps its start and a digest of the whole."""
    joined = f"{_OUTSIDE.sub('_', server)}{SEPARATOR}{_OUTSIDE.sub('_', name)}"
    if len(joined) <= MAX_LENGTH:
        return joined
    digest = hashlib.sha256(f"{server}\0{name}".encode()).hexdigest()[:8]
    return f"{joined[: MAX_LENGTH - 9]}_{digest}"
