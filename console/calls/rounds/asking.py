"""What identifies a question a call asks people, and the policy it keeps from the moment it is asked."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from console.calls.models import POLICY_MODES, Elicitation
from console.calls.states import QuestionMode
from console.policies.service import Resolved


def canonical_json(value: Any) -> str:
    """Canonical JSON (sorted keys, no whitespace, UTF-8) for hashing."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def request_digest(request: dict[str, Any]) -> str:
    """Identifies one question independent of its round: a restarted call asking it again matches."""
    return sha256_hex(canonical_json(request))


def shown_digest(
    *, server: str, method: str, params: Any, round_n: int, key: str, request: dict[str, Any]
) -> str:
    """Digest of exactly what a person is shown; an answer must name it to count."""
    shown = {
        "server": server,
        "method": method,
        "params": params,
        "round": round_n,
        "key": key,
        "request": request,
    }
    return sha256_hex(canonical_json(shown))


def keep_policy(row: Elicitation, resolved: Resolved) -> None:
    """Fix the policy the question is asked under on the question itself."""
    policy = resolved.policy
    row.answerers = policy.answerers
    row.no_self_approval = policy.no_self_approval
    row.required_approvals = policy.required_approvals if row.mode in POLICY_MODES else 1
    row.step_up_minutes = policy.step_up_minutes
    row.expiry_action = policy.expiry_action
    row.allow_edit = row.mode == QuestionMode.GATE and policy.allow_edit
    if policy.escalation is not None:
        row.escalate_after_minutes, row.escalate_to = policy.escalate_after_minutes, policy.escalate_to
    row.policy_json = json.dumps({"applied": resolved.applied, "destructive": resolved.destructive})
