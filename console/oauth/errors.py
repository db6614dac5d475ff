"""Why an OAuth step was refused: a short `reason` for the audit log, and a message a person can act on."""

from __future__ import annotations

from console.errors import ConsoleError


class OAuthRefused(ConsoleError):
    code = "oauth_refused"

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
