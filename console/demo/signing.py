"""Signed requestState tokens, shared by the demo MCP servers and the MRTR test server.

A server that answers `input_required` hands the client a requestState and must trust it again
on the retry, possibly after a restart or on another instance with the same key. Rather than
store it, these servers sign it:

    token = b64encode(JSON payload) + "." + b64encode(HMAC-SHA256(key, MAC input))

The JSON is compact with sorted keys; base64url is unpadded and must be spelled canonically on
the way back in. The MAC input is `purpose + b"\\x00" + JSON`, so a tag made for one purpose
(e.g. `b"flow"`) never verifies for another (e.g. `b"state"`), except that `purpose=b""` MACs
the JSON alone (the format the deployer demo and the MRTR test server issue).

API: `b64encode`, `b64decode_canonical`, `mac`, `seal`, `unseal` (raises ValueError on any
defect) and `invalid_state` (the JSON-RPC error to answer a bad requestState with). Each server
keeps its own payload fields and checks them itself. Standard library and `mcp` only.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from collections.abc import Mapping
from typing import Any

import mcp.types as types
from mcp import MCPError

__all__ = ["b64decode_canonical", "b64encode", "invalid_state", "mac", "seal", "unseal"]


def b64encode(data: bytes) -> str:
    """Unpadded base64url."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64decode_canonical(text: str) -> bytes:
    """Decode unpadded base64url and insist on the canonical spelling; ValueError otherwise.

    Python's decoder ignores stray characters and unused trailing bits, so without the
    round-trip check a client could change the token text and still pass verification.
    """
    try:
        data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise ValueError("not base64url") from None
    if b64encode(data) != text:
        raise ValueError("not canonical base64url")
    return data


def mac(key: bytes, payload: bytes, *, purpose: bytes = b"state") -> bytes:
    """HMAC-SHA256 of `purpose + b"\\x00" + payload`, or of `payload` alone when `purpose` is b""."""
    message = purpose + b"\x00" + payload if purpose else payload
    return hmac.new(key, message, hashlib.sha256).digest()


def seal(key: bytes, payload: Mapping[str, Any], *, purpose: bytes = b"state") -> str:
    """`<b64 JSON>.<b64 MAC>` for `payload` (compact JSON, sorted keys)."""
    body = json.dumps(dict(payload), separators=(",", ":"), sort_keys=True).encode()
    return f"{b64encode(body)}.{b64encode(mac(key, body, purpose=purpose))}"


def unseal(key: bytes, token: str, *, purpose: bytes = b"state") -> dict[str, Any]:
    """The payload `seal` put in `token`; ValueError unless `token` was sealed with `key` and `purpose`.

    Bad shape, bad or non-canonical base64url, a wrong MAC and a payload that is not a JSON
    object all raise ValueError. The payload's fields are the caller's to check.
    """
    body_text, sep, mac_text = token.partition(".")
    if not sep:
        raise ValueError("no signature")
    body = b64decode_canonical(body_text)
    if not hmac.compare_digest(b64decode_canonical(mac_text), mac(key, body, purpose=purpose)):
        raise ValueError("bad signature")
    payload = json.loads(body)  # only bytes we signed get here; JSONDecodeError is a ValueError
    if not isinstance(payload, dict):
        raise ValueError("payload is not a JSON object")
    return payload


def invalid_state(reason: str) -> MCPError:
    """The error for an unusable requestState: -32602 with data {"reason": "invalid_request_state"}."""
    # Same code and data as the SDK's MCPServer, so clients recognise it the same way.
    return MCPError(
        code=types.INVALID_PARAMS,
        message=f"invalid requestState: {reason}",
        data={"reason": "invalid_request_state"},
    )
