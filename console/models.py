"""Imports every domain's models so `Base.metadata` is complete (Alembic reads it)."""

from console.audit.models import AuditEvent
from console.calls.models import AgentRequest, Call, CallRound, DispatchJob, Elicitation, Run, Signature
from console.db import Base
from console.identity.models import (
    ApiToken,
    IdempotentRequest,
    LoginFailure,
    Membership,
    OidcLogin,
    ServerCredential,
    SsoAssertion,
    Team,
    User,
    WebSession,
)
from console.mcp.models import McpServer
from console.notify.models import Channel, Delivery, Notice
from console.oauth.models import OAuthAttempt, OAuthClient
from console.policies.models import PolicyRule

__all__ = [
    "AgentRequest",
    "ApiToken",
    "AuditEvent",
    "Base",
    "Call",
    "CallRound",
    "Channel",
    "Delivery",
    "DispatchJob",
    "Elicitation",
    "IdempotentRequest",
    "LoginFailure",
    "McpServer",
    "Membership",
    "Notice",
    "OAuthAttempt",
    "OAuthClient",
    "OidcLogin",
    "PolicyRule",
    "Run",
    "ServerCredential",
    "Signature",
    "SsoAssertion",
    "Team",
    "User",
    "WebSession",
]
