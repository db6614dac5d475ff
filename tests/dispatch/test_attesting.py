"""Approval attestations end to end, against the real demo deployer process (over HTTP, so an attacker could
send it what they hold): it deploys to production only with the console's attestation issued for itself,
approved by two people other than the requester, of the right kind, once. A hostile server's attestation,
a requester's own answer and a lone approver are refused; edited arguments are attested as sent; a resend
after an interruption carries the same attestation, which the deployer refuses as a replay, and once that
expired only a new approval sends the deploy."""

from __future__ import annotations

import shlex
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from sqlalchemy import select

from console.attestation import (
    APPROVAL_META,
    Attester,
    Claims,
    arguments_digest,
    derived_key,
    unverified_claims,
)
from console.audit import SYSTEM
from console.calls.models import DispatchJob
from console.calls.service import resend_interrupted
from console.errors import Conflict
from console.identity import Viewer, create_token, create_user, team_by_name
from console.identity.credentials import CredentialCipher
from console.mcp.admin import ServerSettings, create_server
from console.mcp.models import McpServer
from console.mcp.sealed import Outbound
from console.policies.service import save_rule
from console.transactions import transaction
from tests.harness import REPO, SECRET_KEY, Console, Mrtr, ServerSpec, result_text, running_console, user_id
from tests.policies.setup import set_policy
from tests.processes import WORKER_WAIT, ServerProcess, ended, serving_keys, start_http_server, worker_process

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ISSUER = "http://console.test"  # the base URL of every console under test (tests.harness.test_settings)
PRODUCTION = {"service": "billing", "environment": "production"}
DEPLOYED = "billing 2.4.1 is being deployed to production."
REFUSED = "Not deployed: production needs the console's approval ("
HOSTILE = [sys.executable, str(REPO / "tests" / "servers" / "hostile_deployer.py")]
CRASH_EXIT_CODE = 86


@pytest.fixture(scope="module")
def deployer(tmp_path_factory: pytest.TempPathFactory, state_key: str) -> Iterator[ServerProcess]:
    """The demo deployer over HTTP, checking the approvals of the consoles under test (their keys)."""
    with serving_keys(Attester(derived_key(SECRET_KEY)).key_set()) as jwks_url:
        env = {
            "DEPLOY_STATE_KEY": state_key,
            "DEPLOY_REQUIRE_APPROVAL_JWKS": jwks_url,
            "DEPLOY_APPROVAL_ISSUER": ISSUER,
        }
        argv = [sys.executable, "-m", "console.demo.deployer"]
        with start_http_server(argv, env, tmp_path_factory.mktemp("deployer") / "server.txt") as server:
            yield server


def outcome(call: dict[str, Any]) -> tuple[bool, str]:
    """Whether the completed tools/call result is an error, and its text."""
    assert call["status"] == "completed", call
    text = "".join(part["text"] for part in call["result"]["content"] if part["type"] == "text")
    return bool(call["result"].get("isError")), text


async def gate_production(console: Console, server: str = "deployer", **values: Any) -> None:
    """A gate on production deploys: by default two approvers, not the requester."""
    policy = {"required_approvals": 2, "no_self_approval": True, **values}
    condition = 'environment == "production"'
    await set_policy(console, "tool", server=server, tool="deploy", condition=condition, gate=True, **policy)


async def decide(
    console: Console,
    call: dict[str, Any],
    *people: str,
    content: Any = None,
    settle: bool = True,
    requester: str = "dev",
) -> dict[str, Any]:
    """Each of `people` accepts the call's pending question (with `content`); the call once it settled."""
    [pending] = call["pending"]
    for who in people:
        decided = await console.answer(pending["id"], "accept", content, who=who)
        assert decided.status_code == 200, decided.text
    if not settle:
        return call
    return await console.settle(call["id"], who=requester, after_round=call["round"])


async def kept_attestations(console: Console, call_id: str) -> list[Claims]:
    """What the attestations of the call's sends say, as the console kept them, oldest first."""
    async with transaction(console.runtime.factory) as session:
        kept = await session.execute(
            select(DispatchJob.attestation)
            .where(DispatchJob.call_id == call_id, DispatchJob.attestation.is_not(None))
            .order_by(DispatchJob.created_at)
        )
        return [unverified_claims(token) for token in kept.scalars() if token is not None]


async def kept_attestation(console: Console, call_id: str) -> Claims:
    """What the one attestation the call's sends carried says."""
    [claims] = await kept_attestations(console, call_id)
    return claims


async def replay(deployer: ServerProcess, token: str) -> tuple[bool, str]:
    """The attacker sends the real deployer the attestation they hold, for the same deploy."""
    async with Client(deployer.url) as client:
        result = await client.call_tool("deploy", PRODUCTION, meta={APPROVAL_META: token})  # type: ignore[arg-type]  # meta is any JSON object
    return bool(result.is_error), "".join(part.text for part in result.content if part.type == "text")


async def test_a_production_deploy_two_approvers_approved_at_the_gate_is_deployed(
    database_url: str, deployer: ServerProcess
) -> None:
    async with running_console(database_url, {"deployer": ServerSpec(url=deployer.url)}) as console:
        await gate_production(console)
        call = await console.call("deployer", "deploy", PRODUCTION)
        assert outcome(await decide(console, call, "lead", "lead2")) == (False, DEPLOYED)
        claims = await kept_attestation(console, call["id"])
    assert (claims.issuer, claims.audience, claims.kind, claims.requester) == (
        ISSUER,
        deployer.url,
        "gate",
        "dev",
    )
    assert (claims.approvers, claims.questions[0].required) == (("lead", "lead2"), 2)


async def test_one_approver_is_refused_where_the_deployer_requires_two(
    database_url: str, deployer: ServerProcess
) -> None:
    async with running_console(database_url, {"deployer": ServerSpec(url=deployer.url)}) as console:
        await gate_production(console, required_approvals=1)
        call = await console.call("deployer", "deploy", PRODUCTION)
        done = await decide(console, call, "lead")
    assert outcome(done) == (
        True,
        REFUSED + "the attestation records 1 approver (lead) besides the requester dev; 2 are required).",
    )


async def test_the_requesters_own_answer_to_the_deployers_question_is_no_approval(
    database_url: str, deployer: ServerProcess
) -> None:
    """With no policy, dev may answer the question their own deploy asks ("deploy where?"): the answer
    goes to the deployer attested as dev's own, which approves nothing."""
    async with running_console(database_url, {"deployer": ServerSpec(url=deployer.url)}) as console:
        call = await console.call("deployer", "deploy", {"service": "billing"})
        assert [p["key"] for p in call["pending"]] == ["target"]
        done = await decide(console, call, "dev", content={"environment": "production", "confirm": True})
        claims = await kept_attestation(console, call["id"])
    assert outcome(done) == (
        True,
        REFUSED + "the attestation records 0 approvers besides the requester dev; 2 are required).",
    )
    assert (claims.kind, claims.requester, claims.approvers) == ("answer", "dev", ())


async def test_two_approvers_answering_the_deployers_question_deploy_to_production(
    database_url: str, deployer: ServerProcess
) -> None:
    async with running_console(database_url, {"deployer": ServerSpec(url=deployer.url)}) as console:
        await set_policy(
            console, "tool", server="deployer", tool="deploy", required_approvals=2, no_self_approval=True
        )
        call = await console.call("deployer", "deploy", {"service": "billing"})
        answer = {"environment": "production", "confirm": True}
        assert outcome(await decide(console, call, "lead", "lead2", content=answer)) == (False, DEPLOYED)
        claims = await kept_attestation(console, call["id"])
    assert (claims.kind, claims.approvers) == ("answer", ("lead", "lead2"))


async def add_to_elsewhere(console: Console) -> None:
    """The other team gets a member whose agent calls and a second approver beside `outsider`."""
    async with transaction(console.runtime.factory) as session:
        for name, role in (("mallory", "member"), ("outsider2", "approver")):
            await create_user(
                session=session, name=name, team_name="elsewhere", role=role, password=f"{name}-pw-1"
            )
            issued = await create_token(
                session=session, user_name=name, team_name="elsewhere", cipher=CredentialCipher(SECRET_KEY)
            )
            console.tokens[name] = issued.token


async def register_hostile(console: Console, team: str, name: str) -> None:
    async with transaction(console.runtime.factory) as session:
        await create_server(
            session=session,
            by=None,
            team_name=team,
            name=name,
            settings=ServerSettings(transport="stdio", command=shlex.join(HOSTILE), internal=True),
            outbound=Outbound(CredentialCipher(SECRET_KEY)),
        )


async def gate_in(console: Console, team: str, server: str) -> None:
    """Two approvers, not the requester, gate production deploys on the team's `server`."""
    async with transaction(console.runtime.factory) as session:
        found = await team_by_name(session=session, name=team)
        query = select(McpServer.id).where(McpServer.team_id == found.id, McpServer.name == server)
        await save_rule(
            session=session,
            actor=SYSTEM,
            team_id=found.id,
            scope="tool",
            server_id=(await session.execute(query)).scalar_one(),
            tool_pattern="deploy",
            condition='environment == "production"',
            values={"gate": True, "required_approvals": 2, "no_self_approval": True},
        )


@pytest.mark.parametrize(
    ("team", "name", "requester", "approvers"),
    [
        ("platform", "staging", "dev", ("lead", "lead2")),
        ("elsewhere", "deployer", "mallory", ("outsider", "outsider2")),
    ],
    ids=["another server of the team", "a server of the same name in another team"],
)
async def test_an_approval_given_for_a_hostile_server_is_refused_by_the_real_deployer(
    database_url: str,
    deployer: ServerProcess,
    team: str,
    name: str,
    requester: str,
    approvers: tuple[str, str],
) -> None:
    """Two people approve a production deploy on a hostile server with the same tool and arguments; it keeps
    the attestation and sends it to the real deployer, which refuses it: it was issued for someone else."""
    async with running_console(database_url, {"deployer": ServerSpec(url=deployer.url)}) as console:
        await add_to_elsewhere(console)
        await register_hostile(console, team, name)
        await gate_in(console, team, name)
        run = await console.client.post(
            "/api/v1/runs",
            json={"team": team, "title": "hostile", "agent": "pytest"},
            headers=console.auth(requester),
        )
        assert run.status_code == 201, run.text
        call = await console.call(name, "deploy", PRODUCTION, who=requester, run_id=run.json()["id"])
        refused_as_self = await console.answer(call["pending"][0]["id"], "accept", who=requester)
        assert refused_as_self.status_code == 403, refused_as_self.text
        done = await decide(console, call, *approvers, requester=requester)
        hostile, token = outcome(done)
        claims = await kept_attestation(console, call["id"])
    assert not hostile
    assert token.count(".") == 2  # the compact JWS the hostile server was sent
    assert (claims.server, claims.name, claims.approvers) == (name, "deploy", approvers)
    assert claims.arguments_sha256 == arguments_digest({"arguments": PRODUCTION})
    assert claims.audience.startswith("urn:approval-console:server:")
    assert await replay(deployer, token) == (
        True,
        REFUSED + f"the attestation is for the audience {claims.audience!r}, not {deployer.url!r}).",
    )


async def test_a_gated_call_whose_arguments_the_approvers_edited_runs_with_an_attestation_of_the_edit(
    database_url: str, deployer: ServerProcess
) -> None:
    edited = {"service": "auth-service", "environment": "production"}
    async with running_console(database_url, {"deployer": ServerSpec(url=deployer.url)}) as console:
        await gate_production(console, allow_edit=True)
        call = await console.call("deployer", "deploy", PRODUCTION)
        done = await decide(console, call, "lead", "lead2", content={"arguments": edited})
        claims = await kept_attestation(console, call["id"])
    assert outcome(done) == (False, "auth-service 2.4.1 is being deployed to production.")
    assert claims.arguments_sha256 == arguments_digest({"arguments": edited})
    assert claims.asked_arguments_sha256 == arguments_digest({"arguments": PRODUCTION})
    assert (claims.edited_by, claims.approvers) == ("lead", ("lead", "lead2"))


async def test_an_answer_after_an_edited_gate_is_attested_with_the_edit_and_its_editor(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        await set_policy(console, "tool", server="mrtr", tool="signed", gate=True, allow_edit=True)
        call = await console.call("mrtr", "signed", {"item": "asked"})
        asked = await decide(console, call, "lead", content={"arguments": {"item": "edited"}})
        done = await decide(console, asked, "lead2", content={"ok": True})
        gate, answer = await kept_attestations(console, call["id"])
    assert result_text(done) == "signed edited ok=True"
    assert (gate.kind, gate.approvers, answer.kind, answer.approvers) == (
        "gate",
        ("lead",),
        "answer",
        ("lead2",),
    )
    for claims in (gate, answer):
        assert claims.arguments_sha256 == arguments_digest({"arguments": {"item": "edited"}})
        assert claims.asked_arguments_sha256 == arguments_digest({"arguments": {"item": "asked"}})
        assert claims.edited_by == "lead"
    assert gate.token_id != answer.token_id


def _worker(database_url: str, log: Path, *, fault: str = "") -> subprocess.Popen[bytes]:
    return worker_process(
        database_url,
        log / f"worker-{fault or 'ok'}.txt",
        CONSOLE_ENV="test",
        CONSOLE_TEST_FAULT=fault,
        CONSOLE_LEASE_SECONDS="1",
        CONSOLE_REQUEST_TIMEOUT_SECONDS="10",
        CONSOLE_DISPATCH_POLL_SECONDS="0.1",
        CONSOLE_BASE_URL=ISSUER,
    )


@contextmanager
def _healthy_worker(database_url: str, log: Path) -> Iterator[None]:
    healthy = _worker(database_url, log)
    try:
        yield
    finally:
        healthy.terminate()
        healthy.wait(timeout=WORKER_WAIT)


async def _interrupted_after_approval(console: Console, database_url: str, tmp_path: Path) -> dict[str, Any]:
    """A production deploy two approvers approved, sent to the deployer (which deploys it) by a worker that
    died before recording the outcome: the call is interrupted."""
    await gate_production(console)
    call = await console.call("deployer", "deploy", PRODUCTION, wait=0)
    await decide(console, call, "lead", "lead2", settle=False)
    crashing = _worker(database_url, tmp_path, fault="crash_after_send")
    assert ended(crashing, WORKER_WAIT) == CRASH_EXIT_CODE
    with _healthy_worker(database_url, tmp_path):
        interrupted = await console.settle(call["id"], after_round=0, wait=WORKER_WAIT)
    assert interrupted["status"] == "interrupted", interrupted
    return interrupted


async def test_a_resend_after_an_interruption_carries_the_same_attestation_which_the_deployer_refuses(
    database_url: str, deployer: ServerProcess, tmp_path: Path
) -> None:
    servers = {"deployer": ServerSpec(url=deployer.url)}
    async with running_console(database_url, servers, dispatcher=False) as console:
        call = await _interrupted_after_approval(console, database_url, tmp_path)
        first = await kept_attestation(console, call["id"])
        resent = await console.client.post(f"/api/v1/calls/{call['id']}/resend", headers=console.auth("dev"))
        assert resent.status_code == 200, resent.text
        with _healthy_worker(database_url, tmp_path):
            done = await console.settle(call["id"], wait=WORKER_WAIT)
        assert (await kept_attestation(console, call["id"])).token_id == first.token_id
        [resend] = await console.audit_payloads("call_resent")
    assert resend["attestation"] == first.token_id
    assert outcome(done) == (
        True,
        REFUSED + f"the attestation {first.token_id} was used already (a replay)).",
    )


async def test_a_resend_after_the_attestation_expired_needs_a_new_approval(
    database_url: str, deployer: ServerProcess, tmp_path: Path
) -> None:
    servers = {"deployer": ServerSpec(url=deployer.url)}
    async with running_console(database_url, servers, dispatcher=False) as console:
        call = await _interrupted_after_approval(console, database_url, tmp_path)
        first = await kept_attestation(console, call["id"])
        dev_id = await user_id(console, "dev")
        async with transaction(console.runtime.factory) as session:
            platform = await team_by_name(session=session, name="platform")
            dev = Viewer(user_id=dev_id, user_name="dev", roles={platform.id: "member"})
            with pytest.raises(Conflict) as refused:
                await resend_interrupted(
                    session=session,
                    viewer=dev,
                    call_id=call["id"],
                    now=first.expires_at + timedelta(seconds=1),
                )
        expired = first.expires_at.isoformat().replace("+00:00", "Z")
        assert refused.value.message == (
            f"the approval this call was sent with expired at {expired}, so it is not sent again: only a new "
            "approval sends it (make the call again)"
        )
        assert (await console.get_call(call["id"]))["status"] == "interrupted"

        again = await console.call("deployer", "deploy", PRODUCTION, wait=0)
        assert again["pending"][0]["kind"] == "gate"
        await decide(console, again, "lead", "lead2", settle=False)
        with _healthy_worker(database_url, tmp_path):
            done = await console.settle(again["id"], after_round=0, wait=WORKER_WAIT)
        assert done["status"] == "completed", done
        assert (await kept_attestation(console, again["id"])).token_id != first.token_id
    assert outcome(done) == (False, DEPLOYED)
