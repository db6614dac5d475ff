"""The app keeps what it runs with in one typed `Runtime` (console/runtime.py), and nothing else in the
console (or its benchmarks) reads or writes the app's untyped state."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from fastapi import FastAPI

import console
from console.runtime import runtime_of

CONSOLE = Path(console.__file__).parent
KEEPER = CONSOLE / "runtime.py"
REPO = CONSOLE.parent


def state_uses(source: str) -> list[int]:
    """The lines of `source` that touch an app's `.state`: `app.state`, `request.app.state`,
    `scope["app"].state`."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Attribute) and node.attr == "state"):
            continue
        owner = node.value
        if (
            (isinstance(owner, ast.Name) and owner.id == "app")
            or (isinstance(owner, ast.Attribute) and owner.attr == "app")
            or (isinstance(owner, ast.Subscript) and ast.literal_eval(owner.slice) == "app")
        ):
            lines.append(node.lineno)
    return lines


@pytest.mark.parametrize(
    "source",
    [
        "app.state.settings",
        "x = request.app.state.factory",
        'factory = scope["app"].state.factory',
        'getattr(request.app.state, "ready", False)',
        "app.state.runtime = runtime",
    ],
)
def test_the_check_finds_each_way_of_reaching_the_apps_state(source: str) -> None:
    assert state_uses(source) == [1]


def test_the_check_leaves_a_requests_own_state_alone() -> None:
    assert state_uses('getattr(request.state, "principal", None)\nconnection.state.get(KEY)') == []


def test_only_console_runtime_reaches_the_apps_state() -> None:
    found = [
        f"{path.relative_to(REPO)}:{line}"
        for folder in (CONSOLE, REPO / "benchmarks")
        for path in sorted(folder.rglob("*.py"))
        if path != KEEPER
        for line in state_uses(path.read_text())
    ]
    assert found == [], "use console.runtime.runtime_of(app) or the RuntimeDep dependency instead"
    assert state_uses(KEEPER.read_text()), "console/runtime.py no longer stores the runtime on the app"


def test_an_app_the_console_did_not_make_has_no_runtime() -> None:
    with pytest.raises(RuntimeError, match="create_app"):
        runtime_of(FastAPI())
