"""The deploy files read as their tools read them: the Containerfile's instructions, compose.yaml's services
with its `${...}` filled in, the Kubernetes manifests and the systemd unit."""

from __future__ import annotations

import configparser
import json
import re
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
CONTAINERFILE = REPO / "Containerfile"
COMPOSE = REPO / "compose.yaml"
KUBERNETES = REPO / "deploy" / "kubernetes"
SYSTEMD_UNIT = REPO / "deploy" / "systemd" / "console.service"

# ${NAME}, ${NAME:-default} and ${NAME:?message}, as compose reads them.
VARIABLE = re.compile(r"\$\{(?P<name>\w+)(?::(?P<kind>[-?])(?P<word>[^}]*))?\}")


def instructions(path: Path = CONTAINERFILE) -> list[tuple[str, str]]:
    """(KEYWORD, arguments) of each instruction, continuation lines joined and comments left out."""
    joined = re.sub(
        r"\\\n",
        " ",
        "\n".join(line for line in path.read_text().splitlines() if not line.lstrip().startswith("#")),
    )
    found = []
    for line in joined.splitlines():
        if line.strip():
            keyword, _, rest = line.strip().partition(" ")
            found.append((keyword.upper(), " ".join(rest.split())))
    return found


def last_stage() -> list[tuple[str, str]]:
    """The instructions of the image's final stage (from its FROM on)."""
    steps = instructions()
    start = max(n for n, (keyword, _) in enumerate(steps) if keyword == "FROM")
    return steps[start:]


def exec_form(arguments: str) -> list[str]:
    found = json.loads(arguments)
    assert isinstance(found, list), arguments
    assert all(isinstance(part, str) for part in found), arguments
    return found


def entry_point() -> list[str]:
    """What the image runs when started without arguments: ENTRYPOINT followed by CMD."""
    stage = dict(last_stage())
    return exec_form(stage["ENTRYPOINT"]) + exec_form(stage["CMD"])


def health_check() -> list[str]:
    """The command of the image's HEALTHCHECK."""
    options = dict(last_stage())["HEALTHCHECK"]
    return exec_form(options[options.index("CMD ") + len("CMD ") :])


def interpolate(text: str, values: dict[str, str]) -> str:
    def fill(match: re.Match[str]) -> str:
        name, kind, word = match["name"], match["kind"], match["word"]
        if values.get(name):
            return values[name]
        if kind == "-":
            return str(word)
        raise KeyError(f"{name}: {word}" if kind == "?" else name)

    return VARIABLE.sub(fill, text)


def compose_services(values: dict[str, str]) -> dict[str, Any]:
    """compose.yaml's services, its `${...}` filled from `values` (KeyError naming one it needs)."""
    document = yaml.safe_load(interpolate(COMPOSE.read_text(), values))
    services: dict[str, Any] = document["services"]
    return services


def kubernetes_documents() -> list[tuple[Path, dict[str, Any]]]:
    return [
        (path, document)
        for path in sorted(KUBERNETES.glob("*.yaml"))
        for document in yaml.safe_load_all(path.read_text())
        if document
    ]


def systemd_unit() -> configparser.ConfigParser:
    unit = configparser.ConfigParser(strict=False, interpolation=None, delimiters=("=",))
    unit.optionxform = str  # type: ignore[assignment,method-assign]  # systemd's keys are case-sensitive
    unit.read_string(SYSTEMD_UNIT.read_text())
    return unit


def on_address(argv: list[str], host: str, port: int) -> list[str]:
    """`argv` with the values of its --host and --port replaced (the test's machine has its own free port)."""
    changed = list(argv)
    for option, value in (("--host", host), ("--port", str(port))):
        changed[changed.index(option) + 1] = value
    return changed
