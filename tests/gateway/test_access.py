"""Who may use the gateway: a token of the team sees its servers; no token, a revoked token, a removed
member, another team's token and an auditor's calls are refused, and none of them sees a tool name."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from console.audit import SYSTEM
from console.identity.teams import remove_member
from console.identity.tokens import list_tokens, revoke_token
from console.identity.viewer import READ_ONLY
from console.transactions import transaction
from tests.gateway.agents import mcp, payload
from tests.harness import TEAM, Console, Mrtr, running_console, stdio_deployer

pytestmark = pytest.mark.anyio


def tool_names(response: httpx.Response) -> set[str]:
    assert response.status_code == 200, response.text
    return {tool["name"] for tool in payload(response)["result"]["tools"]}


@pytest.fixture
async def console(database_url: str, mrtr_memory: Mrtr, state_key: str) -> Any:
    servers = {"deployer": stdio_deployer(state_key), "mrtr": mrtr_memory.spec}
    async with running_console(database_url, servers) as running:
        yield running


async def test_a_member_sees_the_teams_servers_at_mcp_and_one_server_at_its_own_path(
    console: Console,
) -> None:
    assert {"deployer__deploy", "mrtr__pid", "console__await"} <= tool_names(
        await mcp(console, "tools/list", who="dev")
    )
    one = tool_names(await mcp(console, "tools/list", who="dev", path="/mcp/deployer"))
    assert one == {"deploy", "console__await"}


async def test_without_a_valid_token_the_answer_is_401_with_a_challenge_and_no_tool_name(
    console: Console,
) -> None:
    missing = await mcp(console, "tools/list", who=None)
    assert missing.status_code == 401
    assert missing.headers["www-authenticate"].startswith("Bearer realm=")
    console.tokens["forger"] = "mcpc_" + "x" * 40
    forged = await mcp(console, "tools/list", who="forger")
    assert forged.status_code == 401
    assert 'error="invalid_token"' in forged.headers["www-authenticate"]
    for refused in (missing, forged):
        assert "deploy" not in refused.text


async def test_a_page_of_another_site_or_a_rebound_host_name_is_refused_though_the_token_is_good(
    console: Console,
) -> None:
    foreign_sites = (
        {"Origin": "https://evil.example"},
        {"Origin": "null"},  # a sandboxed frame or a local file: a page whose site the browser hides
        {"Host": "evil.example"},
        {"Host": "127.0.0.1.evil"},
    )
    for foreign in foreign_sites:
        refused = await mcp(console, "tools/list", who="dev", extra_headers=foreign)
        assert refused.status_code == 403, (foreign, refused.text)
        assert "deploy" not in refused.text
    hidden = await mcp(console, "tools/list", who="dev", extra_headers={"Origin": "null"})
    assert "(Origin: null)" in payload(hidden)["error"]["message"]
    own = console.runtime.settings.base_url
    for fine in ({"Origin": own}, {"Host": "localhost:3000"}):
        assert "deployer__deploy" in tool_names(
            await mcp(console, "tools/list", who="dev", extra_headers=fine)
        )


async def test_a_revoked_token_and_a_removed_members_token_are_refused(console: Console) -> None:
    for who in ("dev", "lead"):
        assert "deployer__deploy" in tool_names(await mcp(console, "tools/list", who=who))
    async with transaction(console.runtime.factory) as session:
        (token,) = await list_tokens(session=session, user_name="dev")
        await revoke_token(session=session, actor=SYSTEM, token_id=token.id)
        await remove_member(session=session, by=None, team_name=TEAM, user_name="lead")
    for who in ("dev", "lead"):
        refused = await mcp(console, "tools/list", who=who)
        assert refused.status_code == 401
        assert "deploy" not in refused.text


async def test_another_teams_token_sees_none_of_this_teams_servers(console: Console) -> None:
    assert tool_names(await mcp(console, "tools/list", who="outsider")) == {"console__await"}
    elsewhere = await mcp(console, "tools/list", who="outsider", path="/mcp/deployer")
    assert elsewhere.status_code == 404
    assert 'deploy"' not in elsewhere.text
    called = await mcp(
        console, "tools/call", {"name": "deployer__deploy", "arguments": {"service": "x"}}, who="outsider"
    )
    assert payload(called)["error"]["message"] == "unknown tool 'deployer__deploy'"


async def test_an_auditor_lists_but_every_call_is_refused_as_read_only(console: Console) -> None:
    assert "mrtr__pid" in tool_names(await mcp(console, "tools/list", who="viewer"))
    called = await mcp(console, "tools/call", {"name": "mrtr__pid", "arguments": {}}, who="viewer")
    error = payload(called)["error"]
    assert error["message"] == READ_ONLY
