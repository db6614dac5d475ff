"""Who is looking: a signed-in user with their role in each team, from a token or a browser session."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from console.audit import Actor

ANSWERING_ROLES = ("approver", "admin")


@dataclass(frozen=True)
class Viewer:
    user_id: str
    user_name: str
    roles: Mapping[str, str] = field(default_factory=dict)  # team id -> role
    team_names: Mapping[str, str] = field(default_factory=dict)  # team id -> name
    via: str | None = None

    @property
    def actor(self) -> Actor:
        return Actor("user", self.user_id, via=self.via)

    def role_in(self, team_id: str) -> str | None:
        return self.roles.get(team_id)

    def answers_forms_in(self, team_id: str) -> bool:
        return self.roles.get(team_id) in ANSWERING_ROLES
