"""Schemathesis against the agent API of a running `console serve` with a real token: no 5xx, and every
4xx a JSON error with a code. A short run here; `make fuzz` runs a long one (CONSOLE_FUZZ_EXAMPLES)."""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path

import anyio
import pytest

from tests.api_fuzz import fuzz
from tests.harness import Mrtr
from tests.policies.setup import set_policy_at
from tests.site import running_site

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
EXAMPLES = int(os.environ.get("CONSOLE_FUZZ_EXAMPLES", "6"))


@pytest.mark.timeout(900)
async def test_whatever_an_agent_sends_the_api_answers_without_a_5xx_and_with_a_json_error_code(
    database_url: str, tmp_path: Path, mrtr_stdio: Mrtr
) -> None:
    async with running_site(database_url, {"mrtr": mrtr_stdio.spec}, tmp_path) as site:
        await set_policy_at(database_url, "tool", server="mrtr", tool="complete_now", gate=True)
        waiting = await site.call("mrtr", "complete_now", {"x": "fuzz"})  # a call and a question to find
        assert waiting["pending"], waiting
        known = {
            "run_id": waiting["run_id"],
            "call_id": waiting["id"],
            "elicitation_id": waiting["pending"][0]["id"],
        }
        findings = await anyio.to_thread.run_sync(
            partial(fuzz, site.base, site.tokens["dev"], examples=EXAMPLES, known=known)
        )
    assert (findings.requests > 100, findings.chained > 0) == (True, True), findings
    assert findings.problems == [], "\n".join(findings.problems)
