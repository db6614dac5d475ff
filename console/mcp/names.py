"""Names agents see at the gateway's `/mcp`: `<server>__<name>`, kept inside `[A-Za-z0-9_-]` and 64
characters, and the server names that keep them unambiguous.

A server name passes `server_name_problem` when it is made of letters, digits, `-` and `_` only, has no
`__`, does not end in `_`, is at most 40 characters and is not `console`. The first `__` of a name at
/mcp then ends the server's name, which is kept whole, so two servers' names never meet; and a name of
one server that had to change (characters outside the set, or too long) ends in a digest of the
original, so it meets none of that server's names that did not change. New servers must have such a
name (`mcp/admin.py`); one registered earlier may not, and `console servers list` says so.
"""

from __future__ import annotations

import hashlib
import re

SEPARATOR = "__"
MAX_LENGTH = 64  # what model APIs accept for a tool name
MAX_SERVER = 40  # leaves a server's tools at least 22 characters of their own
OWN = "console"  # the console's own tools at /mcp are `console__<name>` (console__await)
DIGEST = 8
_ALLOWED = re.compile(r"[A-Za-z0-9_-]+")
_OUTSIDE = re.compile(r"[^A-Za-z0-9_-]")


def server_name_problem(name: str) -> str | None:
    """Why a server of this name could make names at /mcp ambiguous, or None when it cannot."""
    if not _ALLOWED.fullmatch(name):
        return "only letters, digits, '-' and '_': at /mcp any other character becomes '_'"
    if SEPARATOR in name or name.endswith("_"):
        return "no '__' and no '_' at the end: at /mcp '__' ends the server's name in its tools' names"
    if len(name) > MAX_SERVER:
        return f"at most {MAX_SERVER} characters, so that its tools' names at /mcp keep it whole"
    if name == OWN:
        return f"{OWN!r} is reserved for the console's own tools at /mcp ({OWN}{SEPARATOR}await)"
    return None


def is_own(name: str) -> bool:
    """Whether a name at /mcp is in the console's own part (no server's tool may take it)."""
    return name.startswith(OWN + SEPARATOR)


def gateway_name(server: str, name: str) -> str:
    """The name of a server's tool or prompt among all of a team's: `<server>__<name>`, or, for a name
    that had to change (characters model APIs refuse become `_`, a name too long keeps its start), that
    followed by `_` and a digest of the original."""
    joined = f"{_OUTSIDE.sub('_', server)}{SEPARATOR}{name}"
    if _ALLOWED.fullmatch(name) and len(joined) <= MAX_LENGTH:
        return joined
    digest = hashlib.sha256(f"{server}\0{name}".encode()).hexdigest()[:DIGEST]
    return f"{_OUTSIDE.sub('_', joined)[: MAX_LENGTH - DIGEST - 1]}_{digest}"
