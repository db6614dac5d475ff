"""The agent API fuzzed with Schemathesis from its own OpenAPI document, against a running console and a
real token: every operation with generated valid and invalid requests, then chains of operations linked
by the ids their responses carry (stateful). Whatever is sent, the console answers without a 5xx, and
every 4xx is a JSON error `{"error": {"code", "message"}}`.

Blocking code (Schemathesis sends with `requests`): run it in a thread beside the console's event loop.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import hypothesis
import schemathesis
from hypothesis import HealthCheck
from schemathesis import Case, GenerationMode
from schemathesis.core.result import Err
from schemathesis.core.transport import Response

REQUEST_TIMEOUT = 30  # seconds; a call's own wait is generated within the API's 60 s bound


@dataclass
class Findings:
    """What the fuzzer saw: a problem per line, and how many requests it sent."""

    problems: list[str] = field(default_factory=list)
    requests: int = 0
    chained: int = 0  # of them, sent as steps of linked operations
    statuses: dict[int, int] = field(default_factory=dict)

    def look_at(self, case: Case[Any], response: Response) -> None:
        self.requests += 1
        self.statuses[response.status_code] = self.statuses.get(response.status_code, 0) + 1
        problem = problem_of(response)
        if problem is not None and len(self.problems) < 50:
            self.problems.append(f"{case.method} {case.formatted_path}: {problem}")


def problem_of(response: Response) -> str | None:
    """What is wrong with one response, if anything: a 5xx, or a 4xx that is not a JSON error with a code."""
    status = response.status_code
    if status >= 500:
        return f"{status}: {response.text[:300]}"
    if not 400 <= status < 500:
        return None
    if not response.headers.get("content-type", [""])[0].startswith("application/json"):
        return f"{status} is not JSON: {response.text[:200]}"
    try:
        error = json.loads(response.text).get("error")
    except (ValueError, AttributeError):
        return f"{status} is not a JSON object: {response.text[:200]}"
    if not isinstance(error, dict) or not isinstance(error.get("code"), str) or not error.get("message"):
        return f"{status} has no error code and message: {response.text[:200]}"
    return None


def _no_long_poll(case: Case[Any]) -> None:
    """A valid `wait` holds the request up to a minute on a question nobody answers: never here (a wait
    that is no number, or out of bounds, still goes as generated)."""
    wait = (case.query or {}).get("wait")
    if isinstance(wait, int | float) and not isinstance(wait, bool) and 0 < wait <= 60:
        case.query["wait"] = 0


def fuzz(base: str, token: str, *, examples: int, known: dict[str, str]) -> Findings:
    """Fuzz every operation (`examples` valid and as many invalid requests each, and as many valid ones
    again with the path parameters `known` names: ids of a run, a call and a question that exist), then
    chains of linked operations."""
    schema = schemathesis.openapi.from_url(f"{base}/api/v1/openapi.json", timeout=REQUEST_TIMEOUT)
    headers = {"Authorization": f"Bearer {token}"}
    findings = Findings()
    quick = hypothesis.settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        phases=[hypothesis.Phase.explicit, hypothesis.Phase.generate],
    )
    for result in schema.get_all_operations():
        if isinstance(result, Err):
            findings.problems.append(f"an operation of the OpenAPI document is not valid: {result.err()}")
            continue
        operation = result.ok()
        passes: list[tuple[GenerationMode, dict[str, str]]] = [
            (GenerationMode.POSITIVE, {}),
            (GenerationMode.NEGATIVE, {}),
        ]
        names = [parameter.name for parameter in operation.path_parameters]
        existing = {name: known[name] for name in names if name in known}
        if existing:
            passes.append((GenerationMode.POSITIVE, existing))
        for mode, path_parameters in passes:

            @quick
            @hypothesis.given(
                case=operation.as_strategy(generation_mode=mode, path_parameters=path_parameters)
            )
            def send(case: Case[Any]) -> None:
                _no_long_poll(case)
                findings.look_at(case, case.call(base_url=base, headers=headers, timeout=REQUEST_TIMEOUT))

            try:
                send()
            except hypothesis.errors.Unsatisfiable:
                if mode is GenerationMode.POSITIVE:
                    findings.problems.append(f"{operation.label}: no valid request could be generated")
                # else: nothing of this operation can be sent wrong (no parameters, no body)

    class Workflows(schema.as_state_machine()):  # type: ignore[misc]  # a class the schema builds
        def before_call(self, case: Case[Any]) -> None:
            _no_long_poll(case)

        def get_call_kwargs(self, case: Case[Any]) -> dict[str, Any]:
            return {"base_url": base, "headers": headers, "timeout": REQUEST_TIMEOUT}

        def validate_response(self, response: Response, case: Case[Any], **kwargs: Any) -> None:
            findings.chained += 1
            findings.look_at(case, response)

    Workflows.run(settings=hypothesis.settings(quick, max_examples=examples, stateful_step_count=6))
    return findings
