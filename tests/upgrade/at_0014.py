"""Run by `make_dumps.py` with the console of 2026-12-01 (schema 0014) first on the import path, never by
the suite: it migrates the database named by its argument with that code, and leaves in it what an
upgrade must carry over (a question waiting for its one approver, a two-approver question with one
approval given), then prints the seeded people's API tokens as JSON.

Only what that code's test harness offered is used: it is the old code that must make the database.
"""

from __future__ import annotations

import json
import sys

import anyio

from console.migrate import upgrade
from tests.harness import ServerSpec, running_console
from tests.policies.setup import set_policy

# Questions that outlive the fixtures: the test that loads them answers them years later.
TEN_YEARS = 10 * 365 * 24 * 3600.0
WAITING_STATE = "kept across the upgrade"
# The MRTR test server as the old tree runs it (its folder is the working directory): nothing of the
# machine that made the dumps is kept in them; the upgrade test points the server at its own copy.
MRTR = ServerSpec(command=["python", "tests/servers/mrtr_server.py"], env={"MRTR_LOG": "requests.jsonl"})


async def leave_questions(url: str) -> dict[str, str]:
    upgrade(url)
    async with running_console(url, {"mrtr": MRTR}, elicitation_ttl_seconds=TEN_YEARS) as console:
        await set_policy(console, "tool", tool="two_rounds", required_approvals=2)
        waiting = await console.call("mrtr", "echo_state", {"state": WAITING_STATE})
        assert waiting["status"] == "awaiting_input", waiting
        quorum = await console.call("mrtr", "two_rounds", {"topic": "upgrade"})
        assert quorum["status"] == "awaiting_input", quorum
        first = await console.answer(quorum["pending"][0]["id"], "accept", {"name": "Ada"}, who="lead")
        assert first.status_code == 200, first.text
        assert (first.json()["status"], first.json()["approvals"]) == ("pending", 1), first.text
        return console.tokens


def main() -> None:
    tokens = anyio.run(leave_questions, sys.argv[1])
    print(json.dumps(tokens, indent=2, sort_keys=True))  # noqa: T201  # read by make_dumps.py


if __name__ == "__main__":
    main()
