"""What every `console` subcommand prints with: `say` for results, `complain` for errors and warnings."""

from __future__ import annotations

import sys


def say(text: str) -> None:
    print(text, flush=True)  # noqa: T201  # CLI output


def complain(text: str) -> None:
    print(text, file=sys.stderr, flush=True)  # noqa: T201  # CLI output
