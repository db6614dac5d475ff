"""Teams, users, roles, API tokens and browser sessions."""

from console.identity.service import (
    Principal,
    authenticate_token,
    create_team,
    create_token,
    create_user,
    role_in_team,
    team_by_name,
)
from console.identity.viewer import ANSWERING_ROLES, Viewer

__all__ = [
    "ANSWERING_ROLES",
    "Principal",
    "authenticate_token",
    "create_team",
    "create_token",
    "create_user",
    "role_in_team",
    "team_by_name",
    "Viewer",
]
