"""What a gateway test's agent calls and hears while its call waits."""

from __future__ import annotations

import re

import anyio

from tests.harness import WAIT

DEPLOY = {"service": "auth-service"}
TARGET = {"f0": "staging", "f1": "true"}  # the form's fields in schema order: environment, confirm

QUESTION_LINK = re.compile(r"/elicitations/([0-9a-f]+)")


class Heard:
    """The progress notifications an agent heard while its call waited."""

    def __init__(self) -> None:
        self.messages: list[str] = []
        self._asked = anyio.Event()

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.messages.append(message or "")
        if QUESTION_LINK.search(message or ""):
            self._asked.set()

    async def question_id(self) -> str:
        """The question the call waits for, once a notification named it (bounded)."""
        with anyio.fail_after(WAIT):
            await self._asked.wait()
        return next(m.group(1) for text in self.messages if (m := QUESTION_LINK.search(text)))
