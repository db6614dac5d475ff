"""The connect demo's signed tokens: requestState (who, which flow, until when) and connect-link flow ids.

Both are made with CONNECT_STATE_KEY through console.demo.signing, each under its own purpose.
"""

from __future__ import annotations

import hmac
import secrets
import time
from dataclasses import dataclass

from console.demo.connect.config import Config
from console.demo.signing import b64decode_canonical, b64encode, invalid_state, mac, seal, unseal

FLOW_TAG_BYTES = 16


@dataclass(frozen=True)
class ConnectState:
    user: str
    flow: str
    exp: float


def new_flow_id(key: bytes) -> str:
    nonce = b64encode(secrets.token_bytes(16))
    return f"{nonce}.{b64encode(mac(key, nonce.encode(), purpose=b'flow')[:FLOW_TAG_BYTES])}"


def flow_id_is_genuine(key: bytes, flow_id: str) -> bool:
    nonce, sep, tag = flow_id.partition(".")
    if not sep or not nonce or len(flow_id) > 200:
        return False
    try:
        given = b64decode_canonical(tag)
    except ValueError:
        return False
    return hmac.compare_digest(given, mac(key, nonce.encode(), purpose=b"flow")[:FLOW_TAG_BYTES])


def sign_state(key: bytes, state: ConnectState) -> str:
    # The purpose prefix keeps a flow tag from ever verifying as a state signature and vice versa.
    return seal(key, {"user": state.user, "flow": state.flow, "exp": state.exp}, purpose=b"state")


def _open_state(key: bytes, token: str) -> ConnectState:
    """Return the signed state, or raise ValueError if the token was not made with `key`."""
    data = unseal(key, token, purpose=b"state")
    user, flow, exp = data.get("user"), data.get("flow"), data.get("exp")
    if not (isinstance(user, str) and isinstance(flow, str) and isinstance(exp, int | float)):
        raise ValueError("unexpected payload")
    return ConnectState(user=user, flow=flow, exp=float(exp))


def verify_state(config: Config, token: str, user: str) -> ConnectState:
    try:
        state = _open_state(config.key, token)
    except ValueError:
        raise invalid_state("tampered") from None
    if not hmac.compare_digest(state.user.encode(), user.encode()):
        raise invalid_state("foreign")
    if time.time() >= state.exp:
        raise invalid_state("expired")
    return state
