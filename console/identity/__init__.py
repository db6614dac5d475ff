"""Teams, users, roles and API tokens."""

from console.identity.service import (
    ANSWERING_ROLES,
    Principal,
    authenticate_token,
    create_team,
    create_token,
    create_user,
    role_in_team,
    team_by_name,
)

__all__ = [
    "ANSWERING_ROLES",
    "Principal",
    "authenticate_token",
    "create_team",
    "create_token",
    "create_user",
    "role_in_team",
    "team_by_name",
]
