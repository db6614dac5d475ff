"""`console test SCRIPT.yaml`: a list of `console call`s with the results they must give, for server
authors' CI. All calls go to one server through one throwaway console; each prints `ok` or `FAIL` with
what differed, and the exit status is 0 only when every call passed.

    server:                       # exactly one of name (registered; with team when needed), url, command
      command: python -m console.demo.deployer
      env: {DEPLOY_STATE_KEY: "..."}
    calls:
      - name: deploys to staging  # optional; the tool's name by default
        tool: deploy
        args: {service: auth-service}
        elicit: ['accept:{"environment": "staging", "confirm": true}']
        expect:
          status: completed       # the default; or failed, abandoned, awaiting_input (answers ran out) ...
          error: false            # the tool's isError (default false)
          asked: ["version 2.4.1"]           # each is in the message of a question asked
          contains: ["deployed to staging"]  # each is in the result's text
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import anyio
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from console.calls.states import TERMINAL, CallStatus
from console.cli.calling import Target, answering, one_failure, parse_answer, resolve_target, throwaway
from console.cli.common import Subcommands, say
from console.config import Settings
from console.errors import ConsoleError, InvalidInput
from console.scripted import Answer, Outcome, ScriptedConsole

MAX_SCRIPT_BYTES = 1_000_000


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ServerIn(_Strict):
    name: str | None = None
    team: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    command: str | None = None
    env: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _one_place(self) -> ServerIn:
        if sum(value is not None for value in (self.name, self.url, self.command)) != 1:
            raise ValueError("give exactly one of name, url and command")
        return self


class ExpectIn(_Strict):
    status: str = "completed"
    error: bool = False
    asked: list[str] = Field(default_factory=list)
    contains: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _known_status(self) -> ExpectIn:
        if self.status not in (*TERMINAL, CallStatus.AWAITING_INPUT):
            raise ValueError(f"status must be one of {', '.join((*TERMINAL, 'awaiting_input'))}")
        return self


class CallIn(_Strict):
    name: str | None = None
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    elicit: list[str] = Field(default_factory=list)
    expect: ExpectIn = Field(default_factory=ExpectIn)


class ScriptIn(_Strict):
    server: ServerIn
    calls: list[CallIn] = Field(min_length=1)
    timeout: float = Field(default=120.0, gt=0, description="seconds for each call")


def add_test_commands(sub: Subcommands) -> None:
    test = sub.add_parser(
        "test",
        help="run a script of calls with expected results against one server (exit 0 when all pass)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    test.add_argument("script", type=Path, metavar="SCRIPT.yaml")
    test.set_defaults(handler=_test)


def load_script(path: Path) -> tuple[ScriptIn, list[list[Answer]]]:
    """The script and each call's answers.

    Raises:
        ConsoleError: the file cannot be read or is not YAML; InvalidInput: naming each wrong field.
    """
    try:
        with path.open("rb") as file:
            raw = file.read(MAX_SCRIPT_BYTES + 1)
    except OSError as exc:
        raise ConsoleError(f"cannot read {path}: {exc.strerror}") from None
    if len(raw) > MAX_SCRIPT_BYTES:
        raise ConsoleError(f"{path} is larger than {MAX_SCRIPT_BYTES} bytes")
    import yaml  # here: every console command loads this module, and only this one reads YAML

    try:
        data = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise ConsoleError(f"{path} is not valid YAML{where}") from None
    try:
        script = ScriptIn.model_validate(data)
    except ValidationError as exc:
        fields = {
            ".".join(str(p) for p in e["loc"]) or "script": e["msg"].removeprefix("Value error, ")
            for e in exc.errors()
        }
        raise InvalidInput(f"{path} is not a valid script", fields) from None
    answers: list[list[Answer]] = []
    for i, call in enumerate(script.calls):
        try:
            answers.append([parse_answer(text) for text in call.elicit])
        except ConsoleError as exc:
            raise InvalidInput(f"{path} is not a valid script", {f"calls.{i}.elicit": exc.message}) from None
    return script, answers


def _test(settings: Settings, args: argparse.Namespace) -> int:
    script, answers = load_script(args.script)
    server = script.server
    target = resolve_target(
        settings,
        server.name,
        url=server.url,
        command=server.command,
        headers=server.headers,
        env=server.env,
        team=server.team,
    )
    try:
        verdicts = anyio.run(_run_all, target, script, answers)
    except (BaseExceptionGroup, TimeoutError) as exc:
        raise one_failure(exc, script.timeout) from None
    failed = sum(1 for problems in verdicts if problems)
    say(f"{len(verdicts) - failed} passed, {failed} failed")
    return 1 if failed else 0


async def _run_all(target: Target, script: ScriptIn, answers: list[list[Answer]]) -> list[list[str]]:
    verdicts: list[list[str]] = []
    async with throwaway(target, script.timeout) as console:
        for call, given in zip(script.calls, answers, strict=True):
            problems = await _run_one(console, call, given, script.timeout)
            label = call.name or call.tool
            say(f"ok   {label}" if not problems else f"FAIL {label}: {'; '.join(problems)}")
            verdicts.append(problems)
    return verdicts


async def _run_one(console: ScriptedConsole, call: CallIn, given: list[Answer], seconds: float) -> list[str]:
    """What differed from the call's expectations (nothing: it passed)."""
    rounds: list[dict[str, Any]] = []
    try:
        with anyio.fail_after(seconds):
            outcome = await console.call(call.tool, call.args, answering(list(given), rounds.append))
    except ConsoleError as exc:
        return [exc.message]
    except TimeoutError:
        return [f"did not end within {seconds:g} s"]
    return _differences(call.expect, outcome, rounds)


def _differences(expect: ExpectIn, outcome: Outcome, rounds: list[dict[str, Any]]) -> list[str]:
    problems = []
    if outcome.status != expect.status:
        why = f" ({json.dumps(outcome.error)})" if outcome.error else ""
        problems.append(f"status {outcome.status}{why}, expected {expect.status}")
    result = outcome.result or {}
    if outcome.status == CallStatus.COMPLETED and bool(result.get("isError")) != expect.error:
        problems.append(f"isError {bool(result.get('isError'))}, expected {expect.error}")
    messages = [
        str(request.get("params", {}).get("message", ""))
        for line in rounds
        for request in line["inputRequests"].values()
        if isinstance(request, dict)
    ]
    problems += [
        f"no question asked {text!r}" for text in expect.asked if not any(text in m for m in messages)
    ]
    shown = " ".join(
        str(part.get("text", "")) for part in result.get("content") or [] if isinstance(part, dict)
    )
    problems += [f"result {shown[:200]!r} lacks {text!r}" for text in expect.contains if text not in shown]
    return problems
