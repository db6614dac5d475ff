"""completion/complete through the gateway: asked of the server that listed the prompt or resource
template, for the members of the team that enabled it; an auditor is refused (and recorded), and another
team's token, or none, learns nothing."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from console.audit.models import AuditEvent
from console.identity.viewer import READ_ONLY
from tests.gateway.agents import mcp, payload
from tests.harness import Console, user_id

pytestmark = pytest.mark.anyio

PROMPT = {"type": "ref/prompt", "name": "everything__test_prompt_with_arguments"}
TEMPLATE = {"type": "ref/resource", "uri": "test://template/{id}/data"}


async def complete(
    console: Console, who: str | None, ref: dict[str, str], name: str, value: str, path: str = "/mcp"
) -> httpx.Response:
    params: dict[str, Any] = {"ref": ref, "argument": {"name": name, "value": value}}
    return await mcp(console, "completion/complete", params, who=who, path=path)


def values(response: httpx.Response) -> list[str]:
    assert response.status_code == 200, response.text
    found: list[str] = payload(response)["result"]["completion"]["values"]
    return found


async def test_a_member_gets_the_servers_completions_for_a_prompt_and_a_template(
    everything_console: Console,
) -> None:
    assert values(await complete(everything_console, "dev", PROMPT, "arg1", "par")) == [
        "paris",
        "park",
        "party",
    ]
    assert values(await complete(everything_console, "lead", TEMPLATE, "id", "1")) == ["100", "123"]
    unprefixed = {"type": "ref/prompt", "name": "test_prompt_with_arguments"}  # the server's own name
    one_server = await complete(everything_console, "dev", unprefixed, "arg2", "wo", path="/mcp/everything")
    assert values(one_server) == ["world", "wonder", "work"]


async def test_another_teams_token_or_none_gets_no_completion(everything_console: Console) -> None:
    outsider = await complete(everything_console, "outsider", PROMPT, "arg1", "par")
    assert payload(outsider)["error"]["code"] == -32602, outsider.text
    assert "unknown prompt" in payload(outsider)["error"]["message"]
    elsewhere = await complete(everything_console, "outsider", TEMPLATE, "id", "1")
    assert payload(elsewhere)["error"]["code"] == -32602, elsewhere.text
    anonymous = await complete(everything_console, None, PROMPT, "arg1", "par")
    assert anonymous.status_code == 401
    for refused in (outsider, elsewhere, anonymous):
        assert "paris" not in refused.text
        assert "123" not in refused.text


async def test_an_auditor_gets_no_completion_and_the_refusal_is_recorded_with_their_role(
    everything_console: Console,
) -> None:
    for ref, name, value in ((PROMPT, "arg1", "par"), (TEMPLATE, "id", "1")):
        refused = await complete(everything_console, "viewer", ref, name, value)
        assert payload(refused)["error"] == {"code": -32600, "message": READ_ONLY}, refused.text
        assert "paris" not in refused.text
        assert "123" not in refused.text
    viewer = await user_id(everything_console, "viewer")
    async with everything_console.runtime.factory() as session:
        query = select(AuditEvent).where(AuditEvent.action == "access_refused").order_by(AuditEvent.seq)
        recorded = [
            (e.actor_id, e.subject_type, json.loads(e.payload_json))
            for e in (await session.execute(query)).scalars()
        ]
    assert len(recorded) == 2
    for actor, subject, event in recorded:
        assert (actor, subject) == (viewer, "team")
        assert (event["attempt"], event["role"], event["reason"]) == (
            "completion/complete",
            "auditor",
            READ_ONLY,
        )
        assert event["via"].startswith("token:")
