"""Sampling requests that people answer: the reply a person wrote goes back as the model's answer, and a
refused one ends the call. MCP has no sampling result that means "no" (the spec lets the client simply
abandon the request), so a declined, cancelled or expired sampling question abandons the call instead of
resuming it, whatever else its round asked."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit import Actor
from console.calls.models import CallRound, Elicitation
from console.calls.moves import move_round
from console.calls.rounds.abandon import abandon_waiting_call
from console.calls.states import QuestionMode, QuestionStatus, RoundStatus
from console.db import utcnow
from console.identity.models import User
from console.mcp.endpoint import SAMPLING

HUMAN_MODEL = "human"  # the `model` of every reply a person wrote


@dataclass(frozen=True)
class SamplingShown:
    """A sampling request as the person writing the reply sees it (all of it the server's text)."""

    messages: list[tuple[str, str]]  # (role, text); content other than text is named by its type
    system_prompt: str | None
    max_tokens: Any
    temperature: Any
    stop_sequences: list[str]
    preferences: list[str]  # the model hints and priorities, in words
    context: str | None  # the context the server asked to include, which only a model client has


def shown_request(params: dict[str, Any]) -> SamplingShown:
    """What a person is shown of the server's `sampling/createMessage` params (validated when asked)."""
    messages = []
    for message in params.get("messages") or []:
        blocks = message.get("content")
        blocks = blocks if isinstance(blocks, list) else [blocks]
        parts = [_block_text(block) for block in blocks if isinstance(block, dict)]
        messages.append((str(message.get("role")), "\n".join(parts)))
    preferences = params.get("modelPreferences") or {}
    hints = [hint.get("name") for hint in preferences.get("hints") or [] if isinstance(hint, dict)]
    wanted = [f"model hint: {name}" for name in hints if name]
    for name in ("costPriority", "speedPriority", "intelligencePriority"):
        if preferences.get(name) is not None:
            wanted.append(f"{name.removesuffix('Priority')} priority {preferences[name]}")
    context = params.get("includeContext")
    return SamplingShown(
        messages=messages,
        system_prompt=params.get("systemPrompt"),
        max_tokens=params.get("maxTokens"),
        temperature=params.get("temperature"),
        stop_sequences=[str(s) for s in params.get("stopSequences") or []],
        preferences=wanted,
        context=context if context not in (None, "none") else None,
    )


def sampling_result(content_json: str | None) -> dict[str, Any]:
    """The `CreateMessageResult` of an accepted sampling question."""
    reply = json.loads(content_json or "{}").get("reply", "")
    return {
        "role": "assistant",
        "content": {"type": "text", "text": reply},
        "model": HUMAN_MODEL,
        "stopReason": "endTurn",
    }


def _block_text(block: dict[str, Any]) -> str:
    return str(block.get("text", "")) if block.get("type") == "text" else f"[{block.get('type')} content]"


async def end_if_sampling_refused(*, session: AsyncSession, round_: CallRound, actor: Actor) -> bool:
    """When a sampling question of the round (now fully decided) was not accepted, abandon the call and
    return True; the caller then queues no resume. The caller commits."""
    if SAMPLING not in round_.input_requests_json:  # most rounds ask no sampling: no query
        return False
    refused = (
        await session.execute(
            select(Elicitation, User.name)
            .outerjoin(User, User.id == Elicitation.decided_by)
            .where(
                Elicitation.round_id == round_.id,
                Elicitation.mode == QuestionMode.SAMPLING,
                Elicitation.status != QuestionStatus.ACCEPTED,
            )
            .order_by(Elicitation.key)
            .limit(1)
        )
    ).first()
    if refused is None:
        return False
    question, who = refused
    if question.status == QuestionStatus.EXPIRED:
        why = "nobody wrote the model's reply to the server's sampling request in time"
    else:
        why = f"{who or 'someone'} {question.status} the server's sampling request"
    move_round(round_, RoundStatus.ANSWERED)
    await abandon_waiting_call(
        session=session,
        call_id=round_.call_id,
        round_id=round_.id,
        key=question.key,
        reason=f"{why}; MCP has no reply that says no, so the call was abandoned",
        actor=actor,
        now=utcnow(),
    )
    return True
