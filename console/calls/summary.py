"""A tool call in one sentence, built by the console from the tool's name and the call's arguments.

A server names, titles and describes its tools, and an attacker's server may title or describe a tool as
harmless: the sentence therefore takes its verb from the tool's name alone (what the agent called and what
policies match), never from the title or description, and every word after the verb is an argument the
call really carries. The page always shows all the arguments
beside it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

MAX_VALUE = 40  # a longer (or multi-line) value is not a name either: the sentence lists names and values
MAX_SHOWN = 3  # arguments named in the sentence; the rest are counted
# Arguments that say where a call goes: "Deploy billing to production", "Send email to bob@example.com".
DESTINATIONS = ("environment", "env", "target", "destination", "stage", "to")
_WORD_BREAKS = re.compile(r"[_\-./:]+|(?<=[a-z0-9])(?=[A-Z])")


@dataclass(frozen=True)
class CallSummary:
    """The verb (from the tool) and the arguments that fill the sentence."""

    verb: str
    subject: tuple[str, ...]  # values named without their argument's name ("billing", "2.4.1")
    destination: str | None
    named: tuple[tuple[str, str], ...]  # (name, value) when the values do not read as names
    more: int  # arguments left out of the sentence

    def sentence(self) -> str:
        """ "Deploy billing 2.4.1 to production", or "Create issue — repo acme/web, title Fix login"."""
        if self.named:
            listed = ", ".join(f"{name} {value}" for name, value in self.named)
            return f"{self.verb} — {listed}{self._more()}"
        words = [self.verb, *self.subject]
        if self.destination is not None:
            words += ["to", self.destination]
        return " ".join(words) + self._more()

    def question(self) -> str:
        """The gate's title: "Deploy billing to production?"; the first argument and the destination only."""
        if self.named:
            name, value = self.named[0]
            return f"{self.verb} — {name} {value}?"
        words = [self.verb, *self.subject[:1]]
        if self.destination is not None:
            words += ["to", self.destination]
        return " ".join(words) + "?"

    def approve_label(self) -> str:
        """What the approve button does: "Approve and deploy"."""
        verb = self.verb
        if not verb[1:2].isupper():
            verb = verb[0].lower() + verb[1:]
        return f"Approve and {verb}"

    def _more(self) -> str:
        if not self.more:
            return ""
        return f" (and {self.more} more argument{'s' if self.more != 1 else ''})"


def summarise_call(tool: str, arguments: Any) -> CallSummary:
    """The call to `tool` with `arguments`, in the console's words."""
    verb = _verb(tool)
    items = [(str(k), v) for k, v in arguments.items()] if isinstance(arguments, dict) else []
    shown = [(name, _text(value)) for name, value in items]
    texts = [(name, text) for name, text in shown if text is not None]
    where = next((n for n, t in texts if n.lower() in DESTINATIONS and _reads_as_name(t)), None)
    destination = dict(texts)[where] if where is not None else None
    kept = [(n, t) for n, t in texts if n != where][: MAX_SHOWN - (where is not None)]
    if all(isinstance(arguments[n], str) and _reads_as_name(t) for n, t in kept):
        more = len(items) - len(kept) - (where is not None)
        return CallSummary(verb, tuple(t for _, t in kept), destination, (), more)
    named = [(n, _clip(t)) for n, t in texts[:MAX_SHOWN]]
    return CallSummary(verb, (), None, tuple(named), len(items) - len(named))


def _verb(tool: str) -> str:
    words = " ".join(w for w in _WORD_BREAKS.split(tool) if w).strip()
    words = _clip(words) or "Call the tool"
    return words[0].upper() + words[1:].lower()


def _text(value: Any) -> str | None:
    """A value the sentence can name (a string, number or yes/no), on one line; None for a list or object."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return " ".join(value.split()) or None
    return None


def _reads_as_name(text: str) -> bool:
    return len(text) <= MAX_VALUE and " " not in text


def _clip(text: str) -> str:
    return text if len(text) <= MAX_VALUE else text[: MAX_VALUE - 1] + "…"
