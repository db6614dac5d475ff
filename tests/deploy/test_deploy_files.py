"""The deploy files say what docs/operations/deploy.md says they do: the Containerfile builds the wheel
in one stage and runs `console serve` as a non-root user in the next, compose.yaml starts a console, a
worker and PostgreSQL after the migration, the Kubernetes manifests pass the Kubernetes schemas, and
every command any of them gives the console is one `console` accepts."""

from __future__ import annotations

import copy
import shlex
from pathlib import Path
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import pytest

from console.cli.main import build_parser
from tests.deploy.files import (
    COMPOSE,
    REPO,
    compose_services,
    entry_point,
    exec_form,
    health_check,
    instructions,
    kubernetes_documents,
    last_stage,
    systemd_unit,
)
from tests.harness import SECRET_KEY

# An older release many clusters still run, and the newest whose schemas kubernetes-validate carries.
KUBERNETES_VERSIONS = ("1.30.0", kubernetes_validate.latest_version())
VALUES = {"POSTGRES_PASSWORD": "a-password", "CONSOLE_SECRET_KEY": SECRET_KEY}


def accepted(argv: list[str]) -> bool:
    """Whether `console` parses these arguments (it exits on ones it does not know)."""
    try:
        build_parser().parse_args(argv)
    except SystemExit:
        return False
    return True


def test_the_image_builds_the_wheel_in_a_first_stage_and_runs_it_as_a_non_root_user() -> None:
    steps = instructions()
    assert steps[0][0] == "ARG"
    assert steps[0][1].startswith("BASE="), steps[0]
    assert [args for keyword, args in steps if keyword == "FROM"] == ["${BASE} AS build", "${BASE}"]
    build = steps[: len(steps) - len(last_stage())]
    assert any("pip wheel" in args and "--no-deps" in args for keyword, args in build if keyword == "RUN")
    final = dict(last_stage())
    assert final["COPY"] == "--from=build /opt/console /opt/console"
    user = final["USER"].split(":")
    assert user[0].isdigit(), final["USER"]
    assert int(user[0]) > 0, final["USER"]
    assert f"--uid {user[0]}" in final["RUN"]
    assert not any(keyword == "ENV" and "CONSOLE_" in args for keyword, args in steps), (
        "settings come from the environment"
    )
    assert final["EXPOSE"] == "8000"


def test_the_image_runs_console_serve_on_port_8000_and_checks_readyz() -> None:
    argv = entry_point()
    assert argv == ["console", "serve", "--host", "0.0.0.0", "--port", "8000"]  # noqa: S104  # in a container
    assert accepted(argv[1:])
    assert "http://127.0.0.1:8000/readyz" in " ".join(health_check())


def test_only_the_package_sources_are_sent_to_the_build() -> None:
    patterns = [
        line
        for line in (REPO / ".dockerignore").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    assert patterns[0] == "*"  # .venv, .cache, .git and databases stay out
    allowed = {p.removeprefix("!").rstrip("/") for p in patterns if p.startswith("!")}
    copied = {
        source.rstrip("/")
        for keyword, args in instructions()
        if keyword == "COPY" and not args.startswith("--from")
        for source in args.split()[:-1]
    }
    assert copied == allowed


def test_compose_starts_the_console_and_a_worker_after_the_migration_and_that_after_postgres() -> None:
    services = compose_services(VALUES)
    assert set(services) == {"postgres", "migrate", "console", "worker"}
    assert services["postgres"]["healthcheck"]["test"][1] == "pg_isready"
    assert services["migrate"]["depends_on"] == {"postgres": {"condition": "service_healthy"}}
    assert services["migrate"]["command"] == ["migrate"]
    for name in ("console", "worker"):
        assert services[name]["depends_on"] == {"migrate": {"condition": "service_completed_successfully"}}
    assert services["console"]["command"][:1] == ["serve"]
    assert "--no-dispatcher" in services["console"]["command"]
    assert services["worker"]["command"] == ["worker"]
    assert services["console"]["healthcheck"]["test"] == ["CMD", *health_check()]
    assert services["worker"]["healthcheck"] == {"disable": True}  # it serves no HTTP
    for name in ("migrate", "console", "worker"):
        spec = services[name]
        assert spec["build"] == {"context": ".", "dockerfile": "Containerfile"}
        assert accepted(spec["command"]), spec["command"]
        env = spec["environment"]
        assert env["CONSOLE_DATABASE_URL"] == "postgresql+psycopg://console:a-password@postgres:5432/console"
        assert env["CONSOLE_SECRET_KEY"] == SECRET_KEY


@pytest.mark.parametrize("missing", ["POSTGRES_PASSWORD", "CONSOLE_SECRET_KEY"])
def test_compose_refuses_to_start_without_a_password_or_a_secret_key(missing: str) -> None:
    with pytest.raises(KeyError, match=missing):
        compose_services({k: v for k, v in VALUES.items() if k != missing})
    assert f"${{{missing}:?" in COMPOSE.read_text()


def manifests() -> dict[str, dict[str, Any]]:
    return {document["kind"]: document for _, document in kubernetes_documents()}


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_the_kubernetes_manifests_pass_the_kubernetes_schemas(version: str) -> None:
    documents = kubernetes_documents()
    assert sorted(document["kind"] for _, document in documents) == ["Deployment", "Job", "Service"]
    for _, document in documents:
        kubernetes_validate.validate(document, version, strict=True)  # raises, naming the field
    misspelt = copy.deepcopy(manifests()["Deployment"])
    misspelt["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {}
    with pytest.raises(kubernetes_validate.ValidationError, match="readinesProbe"):
        kubernetes_validate.validate(misspelt, version, strict=True)


def test_the_deployment_probes_healthz_and_readyz_and_its_service_and_job_fit_it() -> None:
    found = manifests()
    pod = found["Deployment"]["spec"]["template"]
    [container] = pod["spec"]["containers"]
    assert container["args"][:1] == ["serve"]
    assert accepted(container["args"])
    assert container["args"][container["args"].index("--port") + 1] == "8000"
    assert container["ports"] == [{"name": "http", "containerPort": 8000}]
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    user = int(dict(last_stage())["USER"].split(":")[0])
    assert pod["spec"]["securityContext"]["runAsUser"] == user
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
    assert found["Service"]["spec"]["selector"] == pod["metadata"]["labels"]
    assert found["Service"]["spec"]["ports"][0]["targetPort"] == "http"
    job = found["Job"]["spec"]["template"]["spec"]
    [migrate] = job["containers"]
    assert migrate["args"] == ["migrate"]
    assert migrate["image"] == container["image"]
    assert migrate["envFrom"] == container["envFrom"]
    assert job["restartPolicy"] == "Never"


def test_the_systemd_unit_runs_console_serve_as_its_own_user_with_settings_from_a_file() -> None:
    service = systemd_unit()["Service"]
    program, *argv = shlex.split(service["ExecStart"])
    assert Path(program).name == "console"
    assert argv[:1] == ["serve"]
    assert accepted(argv)
    assert service["User"] == "console"
    assert service["EnvironmentFile"].startswith("/etc/console/")
    assert service["Restart"] == "on-failure"


def test_a_command_console_does_not_know_is_told_apart() -> None:
    assert not accepted(["serve", "--no-such-option"])
    assert exec_form('["console"]') == ["console"]
