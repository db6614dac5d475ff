"""Every kind of audit event the console records: its name, what one event of it records, and who may see
it. `record_event` refuses a name not listed here; the audit page, its exports and the docs' table of
actions (docs/audit.md) read this list."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Seen(StrEnum):
    """Who may review events of an action (site admins see every event)."""

    TEAM = "team"  # the auditors and admins of the team the event concerns
    SITE = "site"  # site admins only: about the installation, or a person's own account


@dataclass(frozen=True)
class AuditAction:
    name: str
    records: str  # what one event of this action records, a sentence for auditors
    seen_by: Seen = Seen.TEAM


class UnknownAuditAction(ValueError):
    """An event named by no entry of ACTIONS: a programming error, caught before anything is written."""


def _team(name: str, records: str) -> AuditAction:
    return AuditAction(name, records, Seen.TEAM)


def _site(name: str, records: str) -> AuditAction:
    return AuditAction(name, records, Seen.SITE)


_ALL = (
    # A call's life: started, sent, answered by the server, asked, ended.
    _team("run_created", "An agent started a run, the group its calls belong to."),
    _team("call_started", "An agent asked for a tool call, prompt or resource read; its arguments' digest."),
    _team("request_sent", "The console sent the call's request (or a resume) to the MCP server."),
    _team(
        "send_deferred",
        "Nothing reached the server (or it is safe to repeat): the send is tried again later.",
    ),
    _team("round_received", "The server asked for input: its input requests as sent (links redacted)."),
    _team(
        "links_required", "The server refused the call until links are opened (-32042); the links asked for."
    ),
    _team("request_retried", "The call was sent again after the links the server required were opened."),
    _team("roots_answered", "The console answered the server's roots/list with the roots it may know of."),
    _team("round_cap_reached", "The call asked more rounds than CONSOLE_ROUND_CAP allows and was given up."),
    _team(
        "state_rejected_restart",
        "The server refused its request state; the call restarted from its first request.",
    ),
    _team(
        "answer_reapplied",
        "A person's earlier answer was applied again to the restarted call's same question.",
    ),
    _team(
        "held_questions_closed", "The server stopped waiting; what its held questions still asked was closed."
    ),
    _team("task_created", "The server runs the call as a task; the task's digest and status."),
    _team("task_cancel_sent", "The console asked the server to cancel the call's task."),
    _team("call_completed", "The call ended with the server's result (its digest and size, not the result)."),
    _team("call_failed", "The call ended with an error the agent is told."),
    _team(
        "call_interrupted", "The call was cut off (a crash, a restore, the server went away) and not retried."
    ),
    _team(
        "call_abandoned",
        "The call was given up: by its agent, a person, or the round cap; nothing more runs.",
    ),
    _team(
        "call_declined", "A person declined the console's own question, so the call ended without running."
    ),
    _team(
        "call_cancelled",
        "A person cancelled at the console's own question, so the call ended without running.",
    ),
    _team(
        "call_resent", "An interrupted call's request was sent again, by a person or to an idempotent server."
    ),
    _team(
        "call_retried", "An agent asked again for a call that waits at a gate: it joins that call, sent once."
    ),
    _team(
        "call_withdrawal_too_late",
        "The agent gave up on a call the server already had; it was left to finish, and that recorded.",
    ),
    # Questions and answers.
    _team("gate_opened", "A policy gated the call: the approval question and who may answer it."),
    _team(
        "gate_policy_raised", "An approver changed the arguments and a stricter rule now decides the gate."
    ),
    _team("gate_approved", "The gate's approvals are complete: the call may be sent."),
    _team("connect_asked", "The call waits for its user to connect an account (OAuth) to the server."),
    _team("connect_done", "The account was connected, or the person declined; the call goes on or ends."),
    _team(
        "question_answered",
        "A person answered: who, the action, the content and the digest of what they saw.",
    ),
    _team("question_signed", "The first approver signed a question that needs several signatures."),
    _team("question_cosigned", "A further approver signed a question that needs several signatures."),
    _team(
        "question_expired",
        "Nobody answered in time; the question's expiry action (cancel or decline) applied.",
    ),
    _team("agent_answered", "The calling agent answered a sampling or roots request its server sent it."),
    _team("resume_queued", "Every question of a round is answered: the resume is queued to be sent."),
    _team("link_completed", "The server said the flow behind a link question is done."),
    _team("link_reopened", "The owner opened a re-asked link again, having agreed to it before."),
    _team("access_refused", "Someone tried what their role does not allow, or answered twice; what and why."),
    # Teams, people and their access.
    _team("team_created", "A team was created."),
    _team("member_added", "A team admin added a person to the team, with their role."),
    _team("member_role_changed", "A team admin changed a member's role (the old and the new)."),
    _team("member_removed", "A team admin removed a member; their tokens for the team are revoked."),
    _team("membership_added", "A person joined a team (the CLI, or their sign-in provider's groups)."),
    _team("membership_changed", "A person's role in a team changed through their sign-in provider's groups."),
    _team("membership_removed", "A person left a team through their sign-in provider's groups."),
    _team("token_created", "An agent token was created (its id and scope, never the token)."),
    _team("token_revoked", "An agent token was revoked."),
    _team("token_webhook_secret_rotated", "A token's webhook signing secret was replaced."),
    _team("policy_changed", "A policy rule was set: its scope, condition, and what it asks for."),
    _team("policy_removed", "A policy rule was removed."),
    # MCP servers and the accounts people connect to them.
    _team("server_added", "An MCP server was registered."),
    _team("server_changed", "An MCP server's settings changed (the names of what changed, no secrets)."),
    _team("server_disabled", "An MCP server was disabled: no new calls reach it."),
    _team("server_enabled", "An MCP server was enabled again."),
    _team("server_tested", "An admin tested the connection to an MCP server, and how it went."),
    _team("server_values_sealed", "A server's environment and headers stored in plain text were encrypted."),
    _team("team_roots_set", "A team's roots (the folders its servers may be told of) were set."),
    _team("server_roots_set", "An MCP server's own roots were set."),
    _team("credential_saved", "A person saved their own credentials for an MCP server (never the values)."),
    _team("credential_deleted", "A person deleted their own credentials for an MCP server."),
    _team("oauth_started", "A person began connecting their account to an MCP server (OAuth)."),
    _team("oauth_connected", "A person's account was connected to an MCP server."),
    _team("oauth_refused", "Connecting an account was refused (a bad state, issuer or client); why."),
    _team("oauth_refreshed", "A connected account's access was renewed."),
    _team("oauth_expired", "A connected account's access ended and could not be renewed."),
    _team("oauth_disconnected", "A person disconnected their account from an MCP server."),
    _team("oauth_team_token", "The console fetched a token for the team's own account at an MCP server."),
    # Notifications.
    _team("channel_added", "A notification channel (email, webhook, chat) was added to the team."),
    _team("channel_removed", "A notification channel was removed."),
    _team("notification_failed", "A notification could not be delivered after its retries."),
    _team("notification_resent", "An admin sent a failed notification again."),
    # The installation and people's own accounts: site admins only.
    _site("user_created", "A person's account was created (the CLI, or a first sign-in)."),
    _site("site_admin_granted", "A person was made a site admin."),
    _site("signed_in", "A person signed in, and how (password or their sign-in provider)."),
    _site("reauthenticated", "A person confirmed their identity again before a sensitive answer."),
    _site("signed_out", "A person signed out, or their session was ended."),
    _site("sign_in_failed", "A sign-in failed: the name tried and why (never the password)."),
    _site("csrf_failed", "A form arrived without its page's CSRF token and was refused."),
    _site("email_set", "A person's email address was set or changed."),
    _site("email_notifications_set", "A person turned email notifications on or off."),
    _site("audit_exported", "Someone downloaded audit events: the format, size and SHA-256 of the file."),
    _site("restore_detected", "The database was found restored from a backup older than its audit witness."),
)

ACTIONS: dict[str, AuditAction] = {action.name: action for action in _ALL}
SITE_ONLY = frozenset(name for name, action in ACTIONS.items() if action.seen_by is Seen.SITE)


def action_named(name: str) -> AuditAction:
    """The entry for `name`.

    Raises:
        UnknownAuditAction: no action of that name is listed.
    """
    try:
        return ACTIONS[name]
    except KeyError:
        raise UnknownAuditAction(f"no audit action {name!r}: list it in console/audit/actions.py") from None


def reviewable(*, site_admin: bool) -> list[AuditAction]:
    """The actions a reviewer may filter on, by name."""
    return sorted(
        (action for action in _ALL if site_admin or action.seen_by is Seen.TEAM), key=lambda a: a.name
    )
