"""Every web route but the sign-in page needs a session; every state change needs the session's CSRF token
and a same-origin request; every response carries the security headers, and no page has inline script or
style."""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import quote

import httpx
import pytest
from fastapi.routing import APIRoute
from sqlalchemy import func, select

from console.app import WEB_ROUTERS
from console.audit import SYSTEM
from console.audit.models import AuditEvent
from console.calls.connects.parking import open_connect
from console.calls.models import Call, DispatchJob, Run
from console.db import new_id, utcnow
from console.identity import team_by_name
from console.identity.credentials import CredentialCipher
from console.identity.models import ApiToken, Membership, Team, User, WebSession
from console.identity.tokens import TokenInfo, issue_token, list_tokens
from console.mcp.challenge import Challenge
from console.mcp.models import McpServer
from console.mcp.sealed import Outbound
from console.notify.channels import add_channel, team_channels
from console.notify.models import Delivery
from console.oauth.grants import Terms, Tokens, holds_grant, save_grant
from console.oauth.hints import SignInHint
from console.policies.service import RuleView, list_rules, save_rule
from console.transactions import transaction
from tests.harness import (
    TEAM,
    Browser,
    Console,
    Mrtr,
    ServerSpec,
    browser,
    form_fields,
    html,
    one,
    promote,
    register_server,
    running_console,
    signed_in,
    submit_login,
    text,
)

pytestmark = pytest.mark.anyio

PUBLIC = {
    ("GET", "/login"),
    ("POST", "/login"),
    ("GET", "/login/oidc"),
    ("GET", "/login/oidc/callback"),
    ("GET", "/oauth/client-metadata.json"),  # authorization servers fetch it
}
ADMIN_IDS = {"team_name": TEAM, "user_name": "dev", "server_name": "mrtr"}
HTMX = {"HX-Request": "true"}


def web_routes() -> list[tuple[str, str]]:
    """(method, path) of every route of the web routers, from the app's own route table."""
    routes: list[tuple[str, str]] = []
    for router in WEB_ROUTERS:
        for route in router.routes:
            assert isinstance(route, APIRoute), route
            routes.extend((method, route.path) for method in sorted(route.methods or ()))
    return routes


def fill(path: str, ids: dict[str, str]) -> str:
    """The path with each {parameter} replaced by a real id (a KeyError names a new parameter)."""
    return re.sub(r"\{(\w+)\}", lambda match: ids[match.group(1)], path)


async def pending_question(console: Console) -> tuple[str, str]:
    """A new pending form question asked of dev's agent: (question id, run id)."""
    run_id = await console.new_run()
    call = await console.call("mrtr", "two_rounds", {"topic": secrets.token_hex(4)}, run_id=run_id)
    assert call["status"] == "awaiting_input"
    return call["pending"][0]["id"], run_id


async def digest_of(who: Browser, question_id: str) -> str:
    page = await who.client.get(f"/elicitations/{question_id}")
    assert page.status_code == 200, page.text
    return form_fields(one(html(page), "form#decision-form"))["digest"]


async def is_signed_in(who: Browser) -> bool:
    status = (await who.client.get("/")).status_code
    assert status in (200, 303)
    return status == 200


async def audit_count(console: Console, action: str | None = None) -> int:
    query = select(func.count()).select_from(AuditEvent)
    if action is not None:
        query = query.where(AuditEvent.action == action)
    async with transaction(console.runtime.factory) as session:
        count: int = (await session.execute(query)).scalar_one()
    return count


@dataclass
class Target:
    """A state-changing request ready to send, and how to tell whether it took effect."""

    url: str
    body: dict[str, str]
    happened: Callable[[], Awaitable[bool]]
    done: tuple[int, ...] = (303,)  # the status of a plain (non-htmx) request that worked


async def logout_target(console: Console, who: Browser) -> Target:
    async def happened() -> bool:
        return not await is_signed_in(who)

    return Target("/logout", {}, happened)


async def decision_target(console: Console, who: Browser) -> Target:
    question_id, _ = await pending_question(console)
    digest = await digest_of(who, question_id)

    async def happened() -> bool:
        status: str = (await console.question(question_id))["status"]
        return status != "pending"

    return Target(f"/elicitations/{question_id}", {"action": "decline", "digest": digest}, happened)


async def open_link_target(console: Console, who: Browser) -> Target:
    """Dev consents to open the link a URL question of dev's own call asks for."""
    call = await console.call("mrtr", "form_and_url", {})
    question_id = next(p["id"] for p in call["pending"] if p["mode"] == "url")
    page = await who.client.get(f"/connect/{question_id}")
    assert page.status_code == 200, page.text
    digest = form_fields(one(html(page), f'form[action="/connect/{question_id}"]'))["digest"]

    async def happened() -> bool:
        status: str = (await console.question(question_id, who="dev"))["status"]
        return status != "pending"

    return Target(f"/connect/{question_id}", {"digest": digest}, happened, done=(200, 303))


async def credential_target(console: Console, who: Browser) -> Target:
    """Lead saves a personal token for a team server that wants one per person."""
    async with transaction(console.runtime.factory) as session:
        spec = ServerSpec(url="http://127.0.0.1:9/mcp", credential_name="API_TOKEN")
        server = await register_server(session, f"personal-{secrets.token_hex(4)}", spec)
        server_id = server.id

    async def happened() -> bool:
        page = await who.client.get("/connections")
        assert page.status_code == 200, page.text
        return "not connected" not in text(one(html(page), f"#connection-{server_id}"))

    assert not await happened()
    return Target(
        f"/connections/{server_id}", {"action": "save", "secret": "tok-" + secrets.token_hex(8)}, happened
    )


async def oauth_connect_target(console: Console, who: Browser) -> Target:
    """Lead starts connecting their account at a server behind OAuth; nothing answers at its address, so the
    console's attempt ends in a refusal page, and the audit log shows it was made."""
    async with transaction(console.runtime.factory) as session:
        spec = ServerSpec(url="http://127.0.0.1:9/mcp", oauth=True)
        server_id = (await register_server(session, f"oauth-{secrets.token_hex(4)}", spec)).id
    before = await audit_count(console, "oauth_refused")

    async def happened() -> bool:
        return await audit_count(console, "oauth_refused") > before

    return Target(f"/connections/{server_id}/oauth", {}, happened, done=(400,))


async def connect_question_target(console: Console, who: Browser) -> Target:
    """Dev connects from the question a call of theirs waits on (the server refused it for want of dev's
    token); nothing answers at the server's address, so the attempt ends in a refusal page, and the audit
    log shows it was made."""
    run_id = await console.new_run("dev")
    async with transaction(console.runtime.factory) as session:
        spec = ServerSpec(url="http://127.0.0.1:9/mcp", oauth=True)
        server = await register_server(session, f"oauth-{secrets.token_hex(4)}", spec)
        run = await session.get(Run, run_id)
        assert run is not None
        call = Call(
            run_id=run_id,
            server_id=server.id,
            method="tools/call",
            params_json='{"name": "whoami", "arguments": {}}',
            status="running",
        )
        session.add(call)
        await session.flush()
        job = DispatchJob(call_id=call.id, kind="initial", status="sending")
        session.add(job)
        question = await open_connect(
            session=session,
            call=call,
            run=run,
            job=job,
            server=server.name,
            challenge=Challenge(status=401),
            hint=SignInHint(None, None),
            settings=console.runtime.settings,
        )
        question_id = question.id
        await session.commit()
    before = await audit_count(console, "oauth_refused")

    async def happened() -> bool:
        return await audit_count(console, "oauth_refused") > before

    return Target(f"/elicitations/{question_id}/connect", {}, happened, done=(400,))


async def oauth_disconnect_target(console: Console, who: Browser) -> Target:
    """Lead disconnects their account at a server behind OAuth (its authorization server offers no
    revocation, so the grant is only deleted)."""
    async with transaction(console.runtime.factory) as session:
        spec = ServerSpec(url="http://127.0.0.1:9/mcp", oauth=True)
        server_id = (await register_server(session, f"oauth-{secrets.token_hex(4)}", spec)).id
        lead = (await session.execute(select(User).where(User.name == "lead"))).scalar_one()
        terms = Terms(
            "http://127.0.0.1:9",
            "http://127.0.0.1:9/token",
            None,
            "http://127.0.0.1:9/mcp",
            "c",
            "registered",
            "none",
        )
        await save_grant(
            session=session,
            cipher=CredentialCipher(SECRET_KEY),  # the key these tests run the console with
            actor=SYSTEM,
            user_id=lead.id,
            server_id=server_id,
            tokens=Tokens("access-" + secrets.token_hex(8), None, None, "files:read"),
            terms=terms,
        )
        await session.commit()

    async def happened() -> bool:
        async with transaction(console.runtime.factory) as session:
            return not await holds_grant(session=session, user_id=lead.id, server_id=server_id)

    assert not await happened()
    return Target(f"/connections/{server_id}/disconnect", {}, happened)


async def create_token_target(console: Console, who: Browser) -> Target:
    """Lead creates an API token for an agent."""
    name = f"agent-{secrets.token_hex(4)}"
    async with transaction(console.runtime.factory) as session:
        team_id = (await team_by_name(session=session, name=TEAM)).id

    async def happened() -> bool:
        names = [t.name for t in await _tokens_of("lead", console)]
        return name in names

    assert not await happened()
    return Target("/tokens", {"name": name, "team": team_id}, happened, done=(200,))


async def revoke_token_target(console: Console, who: Browser) -> Target:
    """Lead revokes one of their own API tokens."""
    async with transaction(console.runtime.factory) as session:
        lead = (await session.execute(select(User).where(User.name == "lead"))).scalar_one()
        team_id = (await team_by_name(session=session, name=TEAM)).id
        await issue_token(session=session, actor=SYSTEM, user_id=lead.id, team_id=team_id, name="to revoke")
    token_id = next(t.id for t in await _tokens_of("lead", console) if t.name == "to revoke")

    async def happened() -> bool:
        return any(t.id == token_id and t.revoked_at is not None for t in await _tokens_of("lead", console))

    assert not await happened()
    return Target(f"/tokens/{token_id}/revoke", {}, happened)


async def webhook_secret_target(console: Console, who: Browser) -> Target:
    """Lead gives one of their own API tokens a new webhook secret."""
    async with transaction(console.runtime.factory) as session:
        lead = (await session.execute(select(User).where(User.name == "lead"))).scalar_one()
        team_id = (await team_by_name(session=session, name=TEAM)).id
        cipher = Outbound.of(console.runtime.settings).cipher
        await issue_token(
            session=session, actor=SYSTEM, user_id=lead.id, team_id=team_id, name="signing", cipher=cipher
        )
    token_id = next(t.id for t in await _tokens_of("lead", console) if t.name == "signing")

    async def sealed() -> str | None:
        async with transaction(console.runtime.factory) as session:
            token = await session.get(ApiToken, token_id)
            return token.sealed_webhook_secret if token is not None else None

    before = await sealed()

    async def happened() -> bool:
        return await sealed() != before

    assert before is not None
    return Target(f"/tokens/{token_id}/webhook-secret", {}, happened, done=(200,))


async def _team_rules(console: Console) -> list[RuleView]:
    async with transaction(console.runtime.factory) as session:
        team_id = (await team_by_name(session=session, name=TEAM)).id
        return await list_rules(session=session, team_id=team_id)


async def save_policy_target(console: Console, who: Browser) -> Target:
    """The team's admin sets the stricter default for destructive tools."""
    await promote(console, "lead", role="admin")

    async def happened() -> bool:
        return any(v.rule.scope == "destructive" for v in await _team_rules(console))

    assert not await happened()
    body = {"scope": "destructive", "required_approvals": "2", "no_self_approval": "forbid"}
    return Target(f"/admin/teams/{TEAM}/policies", body, happened)


async def remove_policy_target(console: Console, who: Browser) -> Target:
    """The team's admin removes a tool rule."""
    await promote(console, "lead", role="admin")
    async with transaction(console.runtime.factory) as session:
        team_id = (await team_by_name(session=session, name=TEAM)).id
        rule = await save_rule(
            session=session,
            actor=SYSTEM,
            team_id=team_id,
            scope="tool",
            tool_pattern=f"tool-{secrets.token_hex(4)}",
            values={"step_up_minutes": 5},
        )
        rule_id = rule.id

    async def happened() -> bool:
        return all(v.rule.id != rule_id for v in await _team_rules(console))

    assert not await happened()
    return Target(f"/admin/teams/{TEAM}/policies/{rule_id}/remove", {}, happened)


async def reauth_target(console: Console, who: Browser) -> Target:
    """Lead confirms the sign-in with the password again: the session's authenticated_at moves on."""
    session_id = hashlib.sha256(who.client.cookies["console_session"].encode()).hexdigest()

    async def confirmed_at() -> datetime:
        async with transaction(console.runtime.factory) as session:
            moment: datetime = (
                await session.execute(select(WebSession.authenticated_at).where(WebSession.id == session_id))
            ).scalar_one()
        return moment

    before = await confirmed_at()

    async def happened() -> bool:
        return await confirmed_at() > before

    return Target("/reauth", {"password": "lead-pw-1", "next": "/"}, happened)


async def _tokens_of(user_name: str, console: Console) -> list[TokenInfo]:
    async with transaction(console.runtime.factory) as session:
        return await list_tokens(session=session, user_name=user_name)


async def _new_person(console: Console, *, role: str | None = None) -> str:
    """A fresh user, in the platform team with `role` when given; returns their name."""
    name = f"p-{secrets.token_hex(4)}"
    async with transaction(console.runtime.factory) as session:
        user = User(name=name)
        session.add(user)
        await session.flush()
        if role is not None:
            team_id = (await team_by_name(session=session, name=TEAM)).id
            session.add(Membership(user_id=user.id, team_id=team_id, role=role))
        await session.commit()
    return name


async def _role_of(console: Console, name: str) -> str | None:
    async with transaction(console.runtime.factory) as session:
        query = (
            select(Membership.role)
            .join(User, User.id == Membership.user_id)
            .join(Team, Team.id == Membership.team_id)
            .where(User.name == name, Team.name == TEAM)
        )
        role: str | None = (await session.execute(query)).scalar_one_or_none()
    return role


async def _server_row(console: Console, name: str) -> McpServer | None:
    async with transaction(console.runtime.factory) as session:
        query = select(McpServer).where(McpServer.name == name)
        server: McpServer | None = (await session.execute(query)).scalar_one_or_none()
    return server


async def _admin_server(console: Console, *, disabled: bool = False) -> str:
    """Lead made an admin of the platform team, and a fresh server of that team; the server's name."""
    await promote(console, "lead", role="admin")
    name = f"srv-{secrets.token_hex(4)}"
    async with transaction(console.runtime.factory) as session:
        server = await register_server(session, name, ServerSpec(url="http://127.0.0.1:9/mcp"))
        server.disabled = disabled
        await session.commit()
    return name


async def create_team_target(console: Console, who: Browser) -> Target:
    """A site admin creates a team."""
    await promote(console, "lead", site_admin=True)
    name = f"team-{secrets.token_hex(4)}"

    async def happened() -> bool:
        async with transaction(console.runtime.factory) as session:
            return (await session.execute(select(Team).where(Team.name == name))).first() is not None

    return Target("/admin/teams", {"name": name}, happened)


async def add_member_target(console: Console, who: Browser) -> Target:
    await promote(console, "lead", role="admin")
    name = await _new_person(console)

    async def happened() -> bool:
        return await _role_of(console, name) == "auditor"

    return Target(f"/admin/teams/{TEAM}/members", {"name": name, "role": "auditor"}, happened, done=(303,))


async def change_role_target(console: Console, who: Browser) -> Target:
    await promote(console, "lead", role="admin")
    name = await _new_person(console, role="member")

    async def happened() -> bool:
        return await _role_of(console, name) == "approver"

    return Target(f"/admin/teams/{TEAM}/members/{name}", {"role": "approver"}, happened)


async def remove_member_target(console: Console, who: Browser) -> Target:
    await promote(console, "lead", role="admin")
    name = await _new_person(console, role="member")

    async def happened() -> bool:
        return await _role_of(console, name) is None

    return Target(f"/admin/teams/{TEAM}/members/{name}/remove", {}, happened)


async def revoke_team_token_target(console: Console, who: Browser) -> Target:
    """A team admin revokes a member's API token."""
    await promote(console, "lead", role="admin")
    async with transaction(console.runtime.factory) as session:
        dev = (await session.execute(select(User).where(User.name == "dev"))).scalar_one()
        team_id = (await team_by_name(session=session, name=TEAM)).id
        await issue_token(session=session, actor=SYSTEM, user_id=dev.id, team_id=team_id, name="doomed")
    token_id = next(t.id for t in await _tokens_of("dev", console) if t.name == "doomed")

    async def happened() -> bool:
        return any(t.id == token_id and t.revoked_at is not None for t in await _tokens_of("dev", console))

    return Target(f"/admin/teams/{TEAM}/tokens/{token_id}/revoke", {}, happened)


async def resend_delivery_target(console: Console, who: Browser) -> Target:
    """A team admin sends a failed notification again."""
    await promote(console, "lead", role="admin")
    async with transaction(console.runtime.factory) as session:
        team_id = (await team_by_name(session=session, name=TEAM)).id
        failed = Delivery(
            team_id=team_id,
            event="question.created",
            subject_id="q",
            channel="email",
            recipient="dev@example.test",
            content_json="{}",
            status="failed",
            attempts=3,
            give_up_at=utcnow(),
        )
        session.add(failed)
        await session.commit()
        delivery_id = failed.id

    async def happened() -> bool:
        async with transaction(console.runtime.factory) as session:
            row = await session.get(Delivery, delivery_id)
            return row is not None and row.status == "pending"

    return Target(f"/admin/teams/{TEAM}/notifications/{delivery_id}/resend", {}, happened)


async def notification_settings_target(console: Console, who: Browser) -> Target:
    """A person turns their email notifications off."""

    async def happened() -> bool:
        async with transaction(console.runtime.factory) as session:
            lead = (await session.execute(select(User).where(User.name == "lead"))).scalar_one()
            return not lead.email_notifications

    return Target("/notifications", {}, happened)


async def _channel_hosts(console: Console) -> list[str]:
    async with transaction(console.runtime.factory) as session:
        return [c.host for c in await team_channels(session=session, by=None, team_name=TEAM)]


async def add_channel_target(console: Console, who: Browser) -> Target:
    """A team admin adds a chat channel."""
    await promote(console, "lead", role="admin")

    async def happened() -> bool:
        return "93.184.216.34" in await _channel_hosts(console)

    return Target(
        f"/admin/teams/{TEAM}/channels",
        {"kind": "slack", "url": "https://93.184.216.34/hooks/x"},
        happened,
        done=(200,),  # the page shows what was added (a webhook's secret, once)
    )


async def remove_channel_target(console: Console, who: Browser) -> Target:
    """A team admin removes a channel."""
    await promote(console, "lead", role="admin")
    async with transaction(console.runtime.factory) as session:
        added = await add_channel(
            session=session,
            cipher=Outbound.of(console.runtime.settings).cipher,
            by=None,
            team_name=TEAM,
            kind="webhook",
            url="https://93.184.216.35/hook",
        )

    async def happened() -> bool:
        return "93.184.216.35" not in await _channel_hosts(console)

    return Target(f"/admin/teams/{TEAM}/channels/{added.channel.id}/remove", {}, happened)


async def add_server_target(console: Console, who: Browser) -> Target:
    await promote(console, "lead", role="admin")
    name = f"srv-{secrets.token_hex(4)}"

    async def happened() -> bool:
        return await _server_row(console, name) is not None

    body = {"name": name, "transport": "http", "url": "https://mcp.example.com/mcp"}
    return Target(f"/admin/teams/{TEAM}/servers", body, happened)


async def edit_server_target(console: Console, who: Browser) -> Target:
    name = await _admin_server(console)

    async def happened() -> bool:
        server = await _server_row(console, name)
        return server is not None and server.trusted

    body = {"transport": "http", "url": "http://127.0.0.1:9/mcp", "trusted": "on"}
    return Target(f"/admin/teams/{TEAM}/servers/{name}", body, happened)


async def disable_server_target(console: Console, who: Browser) -> Target:
    name = await _admin_server(console)

    async def happened() -> bool:
        server = await _server_row(console, name)
        return server is not None and server.disabled

    return Target(f"/admin/teams/{TEAM}/servers/{name}/disable", {}, happened)


async def enable_server_target(console: Console, who: Browser) -> Target:
    name = await _admin_server(console, disabled=True)

    async def happened() -> bool:
        server = await _server_row(console, name)
        return server is not None and not server.disabled

    return Target(f"/admin/teams/{TEAM}/servers/{name}/enable", {}, happened)


async def probe_server_target(console: Console, who: Browser) -> Target:
    """An admin tests a server's connection (nothing listens there: the outcome is an error page)."""
    name = await _admin_server(console)
    server = await _server_row(console, name)
    assert server is not None
    server_id = server.id

    async def happened() -> bool:
        async with transaction(console.runtime.factory) as session:
            query = select(AuditEvent).where(
                AuditEvent.action == "server_tested", AuditEvent.subject_id == server_id
            )
            return (await session.execute(query)).first() is not None

    return Target(f"/admin/teams/{TEAM}/servers/{name}/test", {}, happened, done=(200,))


async def team_roots_target(console: Console, who: Browser) -> Target:
    """A site admin sets the team's default roots."""
    await promote(console, "lead", role="admin", site_admin=True)
    uri = f"file:///srv/{secrets.token_hex(4)}"

    async def happened() -> bool:
        async with transaction(console.runtime.factory) as session:
            team = await team_by_name(session=session, name=TEAM)
            return uri in (team.default_roots_json or "")

    return Target(f"/admin/teams/{TEAM}/roots", {"roots": uri}, happened)


async def server_roots_target(console: Console, who: Browser) -> Target:
    """A site admin sets a server's own roots."""
    name = await _admin_server(console)
    await promote(console, "lead", site_admin=True)
    uri = f"file:///srv/{secrets.token_hex(4)}"

    async def happened() -> bool:
        server = await _server_row(console, name)
        return server is not None and uri in (server.roots_json or "")

    return Target(f"/admin/teams/{TEAM}/servers/{name}/roots", {"roots": uri}, happened)


# Each POST route that needs a session, and who uses it; a new route fails the tests until it is listed.
TARGETS: dict[str, tuple[str, Callable[[Console, Browser], Awaitable[Target]]]] = {
    "/logout": ("lead", logout_target),
    "/elicitations/{elicitation_id}": ("lead", decision_target),
    "/connect/{elicitation_id}": ("dev", open_link_target),
    "/connections/{server_id}": ("lead", credential_target),
    "/connections/{server_id}/oauth": ("lead", oauth_connect_target),
    "/elicitations/{elicitation_id}/connect": ("dev", connect_question_target),
    "/connections/{server_id}/disconnect": ("lead", oauth_disconnect_target),
    "/tokens": ("lead", create_token_target),
    "/tokens/{token_id}/revoke": ("lead", revoke_token_target),
    "/tokens/{token_id}/webhook-secret": ("lead", webhook_secret_target),
    "/notifications": ("lead", notification_settings_target),
    "/admin/teams/{team_name}/policies": ("lead", save_policy_target),
    "/admin/teams/{team_name}/policies/{rule_id}/remove": ("lead", remove_policy_target),
    "/reauth": ("lead", reauth_target),
    "/admin/teams": ("lead", create_team_target),
    "/admin/teams/{team_name}/members": ("lead", add_member_target),
    "/admin/teams/{team_name}/members/{user_name}": ("lead", change_role_target),
    "/admin/teams/{team_name}/members/{user_name}/remove": ("lead", remove_member_target),
    "/admin/teams/{team_name}/tokens/{token_id}/revoke": ("lead", revoke_team_token_target),
    "/admin/teams/{team_name}/notifications/{delivery_id}/resend": ("lead", resend_delivery_target),
    "/admin/teams/{team_name}/channels": ("lead", add_channel_target),
    "/admin/teams/{team_name}/channels/{channel_id}/remove": ("lead", remove_channel_target),
    "/admin/teams/{team_name}/servers": ("lead", add_server_target),
    "/admin/teams/{team_name}/servers/{server_name}": ("lead", edit_server_target),
    "/admin/teams/{team_name}/servers/{server_name}/disable": ("lead", disable_server_target),
    "/admin/teams/{team_name}/servers/{server_name}/enable": ("lead", enable_server_target),
    "/admin/teams/{team_name}/servers/{server_name}/test": ("lead", probe_server_target),
    "/admin/teams/{team_name}/roots": ("lead", team_roots_target),
    "/admin/teams/{team_name}/servers/{server_name}/roots": ("lead", server_roots_target),
}
SECRET_KEY = "test-only-secret-key-" + "0123456789abcdef" * 2


def protected_posts() -> list[str]:
    posts = [path for method, path in web_routes() if method == "POST" and (method, path) not in PUBLIC]
    assert sorted(posts) == sorted(TARGETS), "list each new POST route in TARGETS"
    return posts


async def test_every_web_page_redirects_to_sign_in_when_signed_out(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        question_id, run_id = await pending_question(console)
        ids = {**ADMIN_IDS, "elicitation_id": question_id, "run_id": run_id, "seq": "1"}
        gets = [path for method, path in web_routes() if method == "GET" and (method, path) not in PUBLIC]
        assert {"/", "/inbox", "/inbox/events", "/elicitations/{elicitation_id}", "/runs/{run_id}"} <= set(
            gets
        )
        async with browser(console) as anonymous, browser(console) as forged:
            forged.client.cookies.set("console_session", secrets.token_urlsafe(32), domain="console.test")
            for who in (anonymous, forged):
                for path in gets:
                    url = fill(path, ids)
                    expected = f"/login?next={quote(url, safe='')}"
                    response = await who.client.get(url)
                    assert response.status_code == 303, (path, response.text)
                    assert response.headers["location"] == expected
                    assert response.content == b""
                    response = await who.client.get(url, headers=HTMX)
                    assert response.status_code == 401, path
                    assert response.headers["hx-redirect"] == expected
                    assert response.content == b""
            with_query = await anonymous.client.get("/", params={"mode": "form", "server": "mrtr"})
            assert with_query.headers["location"] == "/login?next=%2F%3Fmode%3Dform%26server%3Dmrtr"
            for public in ("/login", "/healthz", "/static/app.css", "/static/vendor/htmx.min.js"):
                assert (await anonymous.client.get(public)).status_code == 200, public


async def test_every_post_route_does_nothing_when_signed_out(database_url: str, mrtr_memory: Mrtr) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        question_id, run_id = await pending_question(console)
        ids = {
            **ADMIN_IDS,
            "elicitation_id": question_id,
            "run_id": run_id,
            "server_id": new_id(),
            "token_id": new_id(),
            "delivery_id": new_id(),
            "channel_id": new_id(),
            "rule_id": new_id(),
        }
        async with signed_in(console, "lead") as lead, browser(console) as anonymous:
            digest = await digest_of(lead, question_id)
            before = await audit_count(console)
            # Even with a live session's CSRF token: without its cookie nothing happens.
            body = {"csrf_token": lead.csrf, "action": "accept", "digest": digest, "f0": "Mallory"}
            for path in protected_posts():
                url = fill(path, ids)
                response = await anonymous.client.post(url, data=body)
                assert response.status_code == 303, (path, response.text)
                assert response.headers["location"] == f"/login?next={quote(url, safe='')}"
                response = await anonymous.client.post(
                    url, data=body, headers={**HTMX, "X-CSRF-Token": lead.csrf}
                )
                assert response.status_code == 401, path
                assert response.headers["hx-redirect"].startswith("/login?next=")
            assert (await console.question(question_id))["status"] == "pending"
            assert await audit_count(console) == before
            assert await is_signed_in(lead)


async def test_every_post_route_refuses_a_missing_wrong_or_foreign_csrf_token_and_cross_site_requests(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}, secret_key=SECRET_KEY) as console:
        for path in protected_posts():
            name, make = TARGETS[path]
            someone_else = "lead2" if name != "lead2" else "lead"
            async with (
                signed_in(console, name) as who,
                signed_in(console, name) as same_person_elsewhere,
                signed_in(console, someone_else) as other,
            ):
                assert len({who.csrf, same_person_elsewhere.csrf, other.csrf}) == 3
                target = await make(console, who)
                before = await audit_count(console)
                refused_before = await audit_count(console, "csrf_failed")
                right = {**target.body, "csrf_token": who.csrf}
                attempts: dict[str, tuple[dict[str, str], dict[str, str]]] = {
                    "no token": (target.body, {}),
                    "empty token": ({**target.body, "csrf_token": ""}, {}),
                    "wrong token": ({**target.body, "csrf_token": secrets.token_urlsafe(32)}, {}),
                    "wrong header": (target.body, {"X-CSRF-Token": secrets.token_urlsafe(32)}),
                    "same person, other session": (
                        {**target.body, "csrf_token": same_person_elsewhere.csrf},
                        {},
                    ),
                    "other session in header": (target.body, {"X-CSRF-Token": same_person_elsewhere.csrf}),
                    "other person's token": ({**target.body, "csrf_token": other.csrf}, {}),
                    "cross-site fetch": (right, {"Sec-Fetch-Site": "cross-site"}),
                    "same-site fetch": (right, {"Sec-Fetch-Site": "same-site"}),
                    "foreign origin": (right, {"Origin": "http://evil.example"}),
                    "foreign origin, header token": (
                        target.body,
                        {"Origin": "http://evil.example", "X-CSRF-Token": who.csrf},
                    ),
                    "same host, other scheme": (right, {"Origin": "https://console.test"}),
                }
                for attempt, (body, headers) in attempts.items():
                    for extra in ({}, HTMX):
                        response = await who.client.post(target.url, data=body, headers={**headers, **extra})
                        assert response.status_code == 403, (path, attempt, extra, response.text[:300])
                        assert not await target.happened(), (path, attempt)
                assert await is_signed_in(who)
                # Nothing but the refusals themselves, one csrf_failed event each, reaches the audit log.
                assert await audit_count(console) == before + 2 * len(attempts), path
                assert await audit_count(console, "csrf_failed") == refused_before + 2 * len(attempts), path


@pytest.mark.parametrize(
    "how",
    [
        pytest.param({"field": True}, id="form-field"),
        pytest.param({"header": True}, id="header"),
        pytest.param({"header": True, "htmx": True}, id="htmx-header"),
        pytest.param(
            {"field": True, "headers": {"Origin": "http://console.test", "Sec-Fetch-Site": "same-origin"}},
            id="browser-same-origin",
        ),
        pytest.param(
            {"field": True, "headers": {"Origin": "null", "Sec-Fetch-Site": "same-origin"}}, id="origin-null"
        ),
    ],
)
async def test_every_post_route_works_with_the_sessions_csrf_token(
    database_url: str, mrtr_memory: Mrtr, how: dict[str, object]
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}, secret_key=SECRET_KEY) as console:
        for path in protected_posts():
            name, make = TARGETS[path]
            async with signed_in(console, name) as who:
                target = await make(console, who)
                body = dict(target.body)
                headers: dict[str, str] = {}
                extra = how.get("headers")
                if isinstance(extra, dict):
                    headers.update(extra)
                if how.get("field"):
                    body["csrf_token"] = who.csrf
                if how.get("header"):
                    headers["X-CSRF-Token"] = who.csrf
                if how.get("htmx"):
                    headers.update(HTMX)
                response = await who.client.post(target.url, data=body, headers=headers)
                expected = (200, *target.done) if how.get("htmx") else target.done
                assert response.status_code in expected, (path, response.status_code, response.text[:300])
                assert await target.happened(), path


async def test_a_decision_with_a_bad_csrf_token_leaves_the_question_pending(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        question_id, _ = await pending_question(console)
        async with signed_in(console, "lead") as lead:
            digest = await digest_of(lead, question_id)
            before = await audit_count(console)
            body = {"action": "accept", "digest": digest, "f0": "Mallory", "csrf_token": "forged"}
            response = await lead.client.post(f"/elicitations/{question_id}", data=body)
            assert response.status_code == 403
            assert "CSRF" in one(html(response), "main").get_text()
        question = await console.question(question_id)
        assert (question["status"], question["content"], question["decided_by"]) == ("pending", None, None)
        assert await audit_count(console) == before + 1  # the refusal is recorded, and nothing else
        assert await audit_count(console, "csrf_failed") == 1
        # The agent's call is still waiting for the answer too.
        call = await console.get_call(question["call_id"])
        assert call["status"] == "awaiting_input"
        assert [p["id"] for p in call["pending"]] == [question_id]


async def test_the_login_form_refuses_cross_site_posts_even_with_its_token(database_url: str) -> None:
    async with running_console(database_url, {}) as console:
        for headers in ({"Sec-Fetch-Site": "cross-site"}, {"Origin": "http://evil.example"}):
            async with browser(console) as who:
                page = await who.client.get("/login")
                fields = form_fields(one(html(page), 'form[action="/login"]'))
                data = {**fields, "name": "lead", "password": "lead-pw-1"}
                response = await who.client.post("/login", data=data, headers=headers)
                assert response.status_code == 403, headers
                assert "console_session" not in who.client.cookies
                ok = await who.client.post("/login", data=data, headers={"Origin": "http://console.test"})
                assert ok.status_code == 303


# --- security headers and the absence of inline script and style --------------------------


def csp_directives(header: str) -> dict[str, list[str]]:
    directives: dict[str, list[str]] = {}
    for part in header.split(";"):
        if not part.strip():
            continue
        name, *values = part.split()
        directives[name.lower()] = values
    return directives


def header_problems(response: httpx.Response) -> list[str]:
    """What is missing from the security headers of one response, and (for HTML) inline script or style."""
    problems = []
    csp = csp_directives(response.headers.get("content-security-policy", ""))
    if csp.get("frame-ancestors") != ["'none'"]:
        problems.append(f"CSP frame-ancestors is {csp.get('frame-ancestors')}")
    problems += [
        f"{d} allows {bad}"
        for d, v in csp.items()
        for bad in ("'unsafe-inline'", "'unsafe-eval'")
        if bad in v
    ]
    problems += [
        f"CSP lacks {d}" for d in ("script-src", "style-src") if d not in csp and "default-src" not in csp
    ]
    if csp.get("object-src") != ["'none'"]:
        problems.append(f"CSP object-src is {csp.get('object-src')}")
    if response.headers.get("referrer-policy") != "no-referrer":
        problems.append(f"Referrer-Policy is {response.headers.get('referrer-policy')}")
    if response.headers.get("x-content-type-options") != "nosniff":
        problems.append(f"X-Content-Type-Options is {response.headers.get('x-content-type-options')}")
    if response.headers.get("content-type", "").startswith("text/html"):
        if "no-store" not in response.headers.get("cache-control", ""):
            problems.append(f"Cache-Control is {response.headers.get('cache-control')}")
        if "charset=utf-8" not in response.headers["content-type"]:
            problems.append(f"Content-Type is {response.headers['content-type']}")
        problems += markup_problems(response)
    return problems


def markup_problems(response: httpx.Response) -> list[str]:
    soup = html(response)
    tags = list(soup.find_all(True))
    problems = [f"inline script {str(t)[:100]}" for t in tags if t.name == "script" and not t.get("src")]
    problems += [
        f"script with a body {str(t)[:100]}" for t in tags if t.name == "script" and t.get_text().strip()
    ]
    problems += [f"<style> element {str(t)[:100]}" for t in tags if t.name == "style"]
    problems += [f"style attribute on {str(t)[:100]}" for t in tags if t.has_attr("style")]
    problems += [
        f"event handler {name} on <{t.name}>"
        for t in tags
        for name in t.attrs
        if name.lower().startswith(("on", "hx-on"))
    ]
    return problems


async def test_every_page_fragment_and_error_carries_the_security_headers(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    seen: list[tuple[str, int, httpx.Response]] = []

    def keep(label: str, expected: int, response: httpx.Response) -> None:
        seen.append((label, expected, response))  # statuses are checked last, after every header

    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        question_id, run_id = await pending_question(console)
        answered_id, _ = await pending_question(console)
        async with browser(console) as anonymous:
            client = anonymous.client
            keep("login page", 200, await client.get("/login"))
            keep("signed-out page", 303, await client.get("/"))
            keep("signed-out fragment", 401, await client.get("/", headers=HTMX))
            keep("healthz", 200, await client.get("/healthz"))
            keep("static file", 200, await client.get("/static/app.css"))
            keep("unknown page", 404, await client.get("/no-such-page"))
            keep("login without token", 403, await client.post("/login", data={"name": "x", "password": "y"}))
            keep("wrong password", 401, await submit_login(client, "viewer", "wrong"))
            for _ in range(4):
                await submit_login(client, "viewer", "wrong")
            keep("throttled", 429, await submit_login(client, "viewer", "viewer-pw-1"))
        async with signed_in(console, "lead2") as lead2:
            digest = await digest_of(lead2, answered_id)
            decided = await lead2.client.post(
                f"/elicitations/{answered_id}",
                data={"csrf_token": lead2.csrf, "action": "accept", "digest": digest, "f0": "Ada"},
            )
            keep("decision redirect", 303, decided)
        async with signed_in(console, "lead") as lead:
            client = lead.client
            question = f"/elicitations/{question_id}"
            digest = await digest_of(lead, question_id)
            keep("inbox", 200, await client.get("/"))
            keep("inbox alias", 200, await client.get("/inbox"))
            keep("inbox fragment", 200, await client.get("/inbox", headers=HTMX))
            keep("inbox filtered", 200, await client.get("/", params={"mode": "url", "server": "x"}))
            keep("bad filter", 422, await client.get("/", params={"mode": "<script>"}))
            keep("question page", 200, await client.get(question))
            keep("run page", 200, await client.get(f"/runs/{run_id}"))
            keep("answered question", 200, await client.get(f"/elicitations/{answered_id}"))
            keep(
                "outcome fragment",
                200,
                await client.get(f"/elicitations/{answered_id}/outcome", headers=HTMX),
            )
            keep("unknown question", 404, await client.get("/elicitations/nope"))
            keep("unknown question fragment", 404, await client.get("/elicitations/nope", headers=HTMX))
            keep("unknown run", 404, await client.get("/runs/nope"))
            keep("wrong method", 405, await client.get("/logout"))
            keep("csrf refused", 403, await client.post(question, data={"action": "decline"}))
            keep(
                "csrf refused fragment",
                403,
                await client.post(question, data={"action": "decline"}, headers=HTMX),
            )
            missing = {"csrf_token": lead.csrf, "action": "accept", "digest": digest, "f0": ""}
            keep("invalid answer page", 422, await client.post(question, data=missing))
            keep("invalid answer fragment", 422, await client.post(question, data=missing, headers=HTMX))
            late = {"csrf_token": lead.csrf, "action": "decline", "digest": digest}
            keep("already answered", 409, await client.post(f"/elicitations/{answered_id}", data=late))
            keep(
                "already answered fragment",
                409,
                await client.post(f"/elicitations/{answered_id}", data=late, headers=HTMX),
            )
    assert len(seen) >= 25
    problems = {label: found for label, _, response in seen if (found := header_problems(response))}
    assert problems == {}
    statuses = [(label, r.status_code) for label, _, r in seen]
    assert statuses == [(label, expected) for label, expected, _ in seen]
    html_labels = {label for label, _, r in seen if r.headers.get("content-type", "").startswith("text/html")}
    assert {"inbox", "question page", "run page", "unknown page", "invalid answer fragment"} <= html_labels


async def test_an_unexpected_error_page_still_carries_the_security_headers(database_url: str) -> None:
    async with running_console(database_url, {}) as console:

        async def broken() -> None:
            raise RuntimeError("secret detail sk-123")

        console.app.router.add_api_route("/broken-for-test", broken)
        async with signed_in(console, "lead") as lead:
            for headers in ({}, HTMX):
                response = await lead.client.get("/broken-for-test", headers=headers)
                assert response.status_code == 500
                assert "sk-123" not in response.text
                assert "Traceback" not in response.text
                assert header_problems(response) == [], headers
