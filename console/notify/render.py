"""Notification text. Whatever a server or an agent sent is untrusted: control characters become
spaces, it is cut short, and in HTML it is escaped, so it arrives inert."""

from __future__ import annotations

import html
from dataclasses import asdict, dataclass
from datetime import timedelta

MAX_MESSAGE = 500
MAX_NAME = 120


@dataclass(frozen=True)
class Message:
    subject: str
    text: str
    html: str

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


def inert(text: str, limit: int) -> str:
    """One line of at most `limit` characters, without control characters."""
    flat = "".join(c if c.isprintable() else " " for c in text)
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def time_left(left: timedelta) -> str:
    minutes = max(0, round(left.total_seconds() / 60))
    if minutes < 60:
        return f"{minutes} minute{'s' if minutes != 1 else ''}"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes:02d} min"
    return f"{hours // 24} days"


FOLLOW_UPS = {
    "question.reminder": ("Reminder: ", "Still waiting for an answer. "),
    "question.escalated": (
        "Escalated: ",
        "Nobody has answered this yet, so the team's policy sends it to you too. ",
    ),
}


def question_message(
    *,
    server: str,
    target: str,
    owner: str,
    text: str,
    policy: str,
    left: timedelta,
    link: str,
    kind: str = "question.created",
) -> Message:
    """`kind` is question.created, question.reminder or question.escalated."""
    server, target = inert(server, MAX_NAME), inert(target, MAX_NAME)
    owner, said = inert(owner, MAX_NAME), inert(text, MAX_MESSAGE)
    remaining = time_left(left)
    prefix, still = FOLLOW_UPS.get(kind, ("", ""))
    subject = f"{prefix}{server}: a question for {owner}'s call to {target}"
    plain = (
        f"{still}{server} asks, for {owner}'s agent calling {target}:\n\n"
        f"  {said}\n\n"
        f"{policy}\nTime left: {remaining}.\n\n"
        f"Open the question: {link}\n"
        "(The link opens the console; answering there needs you to be signed in.)\n"
    )
    e = html.escape
    markup = (
        f"<p>{e(still)}<strong>{e(server)}</strong> asks, for {e(owner)}'s agent calling "
        f"<code>{e(target)}</code>:</p>"
        f"<blockquote>{e(said)}</blockquote>"
        f"<p>{e(policy)}<br>Time left: {e(remaining)}.</p>"
        f'<p><a href="{e(link)}">Open the question</a></p>'
        "<p>The link opens the console; answering there needs you to be signed in.</p>"
    )
    return Message(subject=subject, text=plain, html=markup)


@dataclass(frozen=True)
class QuestionFacts:
    """A new question as a team channel shows it (its words already inert)."""

    id: str
    server: str
    target: str
    owner: str
    mode: str
    text: str
    policy: str
    expires_at: str  # ISO 8601
    left: str
    link: str


def slack_escape(text: str) -> str:
    """Slack mrkdwn: &, < and > are its control characters (links, mentions)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


TEAMS_MARKDOWN = set("\\`*_{}[]()#+-!|>~<")


def teams_escape(text: str) -> str:
    """Adaptive Card text is Markdown: every character that could format or link is escaped."""
    return "".join(f"\\{c}" if c in TEAMS_MARKDOWN else c for c in text)


def slack_question(facts: QuestionFacts) -> dict[str, object]:
    """A Slack incoming-webhook message (Block Kit), with `text` as the notification's fallback."""
    e = slack_escape
    heading = f"{facts.server}: a question for {facts.owner}'s call to {facts.target}"
    return {
        "text": e(heading),
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": f"*{e(heading)}*"}},
            {"type": "section", "text": {"type": "mrkdwn", "text": f"&gt; {e(facts.text)}"}},
            {
                "type": "context",
                "elements": [{"type": "mrkdwn", "text": e(f"{facts.policy} Time left: {facts.left}.")}],
            },
            {
                "type": "actions",
                "elements": [
                    {
                        "type": "button",
                        "text": {"type": "plain_text", "text": "Open the question"},
                        "url": facts.link,
                    }
                ],
            },
        ],
    }


def teams_question(facts: QuestionFacts) -> dict[str, object]:
    """A Microsoft Teams incoming-webhook message carrying an Adaptive Card."""
    e = teams_escape
    card = {
        "type": "AdaptiveCard",
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "version": "1.4",
        "body": [
            {
                "type": "TextBlock",
                "text": e(f"{facts.server}: a question for {facts.owner}'s call to {facts.target}"),
                "weight": "Bolder",
                "wrap": True,
            },
            {"type": "TextBlock", "text": e(facts.text), "wrap": True},
            {
                "type": "TextBlock",
                "text": e(f"{facts.policy} Time left: {facts.left}."),
                "wrap": True,
                "isSubtle": True,
            },
        ],
        "actions": [{"type": "Action.OpenUrl", "title": "Open the question", "url": facts.link}],
    }
    return {
        "type": "message",
        "attachments": [{"contentType": "application/vnd.microsoft.card.adaptive", "content": card}],
    }


WEBHOOK_VERSION = 1


def webhook_question(facts: QuestionFacts, created_at: str) -> dict[str, object]:
    """The `question.created` event of a signed webhook (schema version 1, in docs/notifications.md)."""
    question = {
        "id": facts.id,
        "mode": facts.mode,
        "message": facts.text,
        "policy": facts.policy,
        "expires_at": facts.expires_at,
        "page": facts.link,
    }
    call = {"server": facts.server, "tool": facts.target, "owner": facts.owner}
    return webhook_event("question.created", created_at, {"question": question, "call": call})


ENDINGS = {
    "completed": "completed",
    "declined": "was declined",
    "cancelled": "was cancelled",
    "failed": "failed",
    "abandoned": "was abandoned",
    "interrupted": "was interrupted",
}


@dataclass(frozen=True)
class CallFacts:
    """A call as its events tell of it (its words already inert)."""

    id: str
    run_id: str
    server: str
    target: str
    owner: str
    status: str
    error: str | None  # the error's message, if the call ended with one
    link: str  # the run's page


def call_facts_json(facts: CallFacts) -> dict[str, object]:
    return {
        "id": facts.id,
        "run_id": facts.run_id,
        "server": facts.server,
        "tool": facts.target,
        "owner": facts.owner,
        "status": facts.status,
        "error": facts.error,
        "page": facts.link,
    }


def call_ended_message(facts: CallFacts) -> Message:
    """The email that tells a requester how their call ended."""
    ended = ENDINGS.get(facts.status, facts.status)
    subject = f"{facts.server}: your call to {facts.target} {ended}"
    why = f"\n\n  {facts.error}" if facts.error else ""
    next_step = (
        "\nIts outcome is unknown: open the run to send it again or abandon it.\n"
        if facts.status == "interrupted"
        else ""
    )
    plain = (
        f"Your agent's call to {facts.target} on {facts.server} {ended}.{why}\n{next_step}\n"
        f"The run: {facts.link}\n"
    )
    e = html.escape
    markup = (
        f"<p>Your agent's call to <code>{e(facts.target)}</code> on <strong>{e(facts.server)}</strong> "
        f"{e(ended)}.</p>"
        + (f"<blockquote>{e(facts.error)}</blockquote>" if facts.error else "")
        + (f"<p>{e(next_step.strip())}</p>" if next_step else "")
        + f'<p><a href="{e(facts.link)}">Open the run</a></p>'
    )
    return Message(subject=subject, text=plain, html=markup)


def answered_message(facts: CallFacts, *, who: str, status: str, question: str) -> Message:
    """The email that tells a requester someone answered a question of their call."""
    said = inert(question, MAX_MESSAGE)
    subject = f"{facts.server}: {who} {status} a question of your call to {facts.target}"
    plain = (
        f"{who} {status} a question of your agent's call to {facts.target} on {facts.server}:\n\n"
        f"  {said}\n\nThe run: {facts.link}\n"
    )
    e = html.escape
    markup = (
        f"<p>{e(who)} {e(status)} a question of your agent's call to <code>{e(facts.target)}</code> on "
        f"<strong>{e(facts.server)}</strong>:</p><blockquote>{e(said)}</blockquote>"
        f'<p><a href="{e(facts.link)}">Open the run</a></p>'
    )
    return Message(subject=subject, text=plain, html=markup)


def webhook_event(event: str, created_at: str, data: dict[str, object]) -> dict[str, object]:
    """Any event of a signed webhook or a callback: schema version 1, in docs/notifications.md."""
    return {"type": event, "version": WEBHOOK_VERSION, "timestamp": created_at, "data": data}
