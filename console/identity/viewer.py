"""Who is looking: a signed-in user with their role in each team, from a token or a browser session."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from console.audit import Actor

ANSWERING_ROLES = ("approver", "admin")
READ_ONLY_ROLES = ("auditor",)
READ_ONLY = "auditors have read-only access: they may look at runs and calls but not start or steer them"
OUTSIDER = "the caller is not a member of its team"  # why another team's run, call or question is refused


@dataclass(frozen=True)
class Viewer:
    user_id: str
    user_name: str
    roles: Mapping[str, str] = field(default_factory=dict)  # team id -> role
    team_names: Mapping[str, str] = field(default_factory=dict)  # team id -> name
    via: str | None = None
    web_session_id: str | None = None  # the browser session, when not an API token (step-up reads it)
    site_admin: bool = False  # may create teams and manage every team

    @property
    def actor(self) -> Actor:
        return Actor("user", self.user_id, via=self.via)

    @property
    def administers_a_team(self) -> bool:
        """Whether the admin pages have something for this person (the pages check again)."""
        return self.site_admin or "admin" in self.roles.values()

    def role_in(self, team_id: str) -> str | None:
        return self.roles.get(team_id)

    def read_only_in(self, team_id: str) -> bool:
        return self.roles.get(team_id) in READ_ONLY_ROLES

    def answers_forms_in(self, team_id: str) -> bool:
        return self.roles.get(team_id) in ANSWERING_ROLES

    def sees_run(self, team_id: str, owner_id: str) -> bool:
        """A run is visible to its owner and to the team's approvers, admins and auditors."""
        return team_id in self.roles and (self.user_id == owner_id or team_id in self.teams_seeing_every_run)

    @property
    def teams_seeing_every_run(self) -> list[str]:
        """The teams in which this person sees every member's runs, not only their own."""
        return [team for team, role in self.roles.items() if role in (*ANSWERING_ROLES, "auditor")]
