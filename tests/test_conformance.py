"""The official MCP conformance suite drives the console's own client path (console.conformance).

The 2026-07-28 client requirement set runs as a whole, and every scenario in it must pass all its checks,
the authorization ones and their extensions included (the console connects through its OAuth flow, the
scripted person's browser clicking through the suite's authorization server).
Suite mode ignores the client's exit status, so the scenarios where exiting cleanly is part of the
contract (the MRTR one above all) run once more on their own, where a non-zero exit fails them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from console.conformance import form_defaults
from tests.conformance.suite import SPEC_VERSION, Suite, install, run_client

# The client scenarios of the 2026-07-28 set besides authorization.
APPLICABLE = (
    "sep-2322-client-request-state",
    "request-metadata",
    "tools_call",
    "http-standard-headers",
    "http-custom-headers",
    "http-invalid-tool-headers",
    "json-schema-ref-no-deref",
    "json-schema-2020-12-preservation",
)
# MCP authorization (console/oauth): the suite's authorization server approves at once.
AUTHORIZATION = tuple(
    f"auth/{name}"
    for name in (
        "metadata-default",
        "metadata-var1",
        "metadata-var2",
        "metadata-var3",
        "basic-cimd",
        "scope-from-www-authenticate",
        "scope-from-scopes-supported",
        "scope-omitted-when-undefined",
        "scope-step-up",
        "scope-retry-limit",
        "token-endpoint-auth-basic",
        "token-endpoint-auth-post",
        "token-endpoint-auth-none",
        "pre-registration",
        "resource-mismatch",
        "offline-access-scope",
        "offline-access-not-supported",
        "authorization-server-migration",
        "iss-supported",
        "iss-not-advertised",
        "iss-supported-missing",
        "iss-wrong-issuer",
        "iss-unexpected",
        "iss-normalized",
        "metadata-issuer-mismatch",
        # The client-credentials extension: a team account's token, with a secret or a JWT assertion.
        "client-credentials-basic",
        "client-credentials-jwt",
        # Workload identity federation: a team account presenting the workload's JWT (RFC 7523 bearer).
        "wif-jwt-bearer",
        # DPoP (RFC 9449): tokens bound to the console's key, with the servers' nonces.
        "dpop",
        "dpop-nonce",
        # Enterprise-managed authorization: the member's ID token exchanged for an ID-JAG, then a grant.
        "enterprise-managed-authorization",
    )
)
SOLO = ("sep-2322-client-request-state", "request-metadata", "json-schema-2020-12-preservation")


@pytest.fixture(scope="module")
def suite() -> Suite:
    return install()


@pytest.mark.slow
@pytest.mark.timeout(1500)  # the first test installs Node 22 and the suite (npm, up to 300 s each)
@pytest.mark.parametrize("scenario", SOLO)
def test_scenario_passes_solo_and_the_client_exits_cleanly(
    suite: Suite, scenario: str, tmp_path: Path
) -> None:
    outcome = run_client(suite, tmp_path, "--scenario", scenario, "--spec-version", SPEC_VERSION)
    assert outcome.checks, outcome.output[-3000:]
    assert outcome.failures() == [], outcome.output[-3000:]
    assert outcome.returncode == 0, outcome.output[-3000:]


@pytest.mark.slow
@pytest.mark.timeout(1500)  # the whole requirement set runs up to 600 s, after the install
def test_requirement_set_passes_every_scenario(suite: Suite, tmp_path: Path) -> None:
    outcome = run_client(suite, tmp_path, "--requirements", SPEC_VERSION)
    # The failed checks first: they name their scenario, which the output's tail may have cut off.
    assert outcome.failures() == [], outcome.output[-4000:]
    assert outcome.returncode == 0, outcome.output[-4000:]
    for scenario in (*APPLICABLE, *AUTHORIZATION):
        checks = outcome.scenario(scenario)
        assert checks, f"{scenario} did not run"
        assert [c for c in checks if c["status"] == "FAILURE"] == [], scenario


def test_scripted_answer_fills_schema_defaults_and_required_fields() -> None:
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "status": {"type": "string", "enum": ["active", "inactive"]},
            "note": {"type": "string"},
        },
        "required": ["status"],
    }
    assert form_defaults(schema) == {"name": "John Doe", "age": 30, "status": "active"}
