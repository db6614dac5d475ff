"""What every `console` subcommand prints with."""

from __future__ import annotations


def say(text: str) -> None:
    print(text, flush=True)  # noqa: T201  # CLI output
