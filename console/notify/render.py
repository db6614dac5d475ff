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
    minutes = max(0, int(left.total_seconds() // 60))
    if minutes < 60:
        return f"{minutes} minute{'s' if minutes != 1 else ''}"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes:02d} min"
    return f"{hours // 24} days"


def question_message(
    *, server: str, target: str, owner: str, text: str, policy: str, left: timedelta, link: str
) -> Message:
    server, target = inert(server, MAX_NAME), inert(target, MAX_NAME)
    owner, said = inert(owner, MAX_NAME), inert(text, MAX_MESSAGE)
    remaining = time_left(left)
    subject = f"{server}: a question for {owner}'s call to {target}"
    plain = (
        f"{server} asks, for {owner}'s agent calling {target}:\n\n"
        f"  {said}\n\n"
        f"{policy}\nTime left: {remaining}.\n\n"
        f"Open the question: {link}\n"
        "(The link opens the console; answering there needs you to be signed in.)\n"
    )
    e = html.escape
    markup = (
        f"<p><strong>{e(server)}</strong> asks, for {e(owner)}'s agent calling <code>{e(target)}</code>:</p>"
        f"<blockquote>{e(said)}</blockquote>"
        f"<p>{e(policy)}<br>Time left: {e(remaining)}.</p>"
        f'<p><a href="{e(link)}">Open the question</a></p>'
        "<p>The link opens the console; answering there needs you to be signed in.</p>"
    )
    return Message(subject=subject, text=plain, html=markup)
