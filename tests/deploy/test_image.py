"""The image built from the Containerfile on a Debian base made from Debian packages, run as compose.yaml
runs it: `migrate`, then `console` and `worker` containers on an empty PostgreSQL database (the host's:
no PostgreSQL image can be pulled here, so the containers share the host's network), and a call a person
answers walked through them. Long (minutes), so `make image` runs it: it runs only with
CONSOLE_TEST_IMAGE=1, and then fails when podman, mmdebstrap or runc is missing."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.deploy.files import entry_point, last_stage
from tests.deploy.image import Containers, build_image, inspect, missing_tools
from tests.deploy.walk import walk_a_call
from tests.processes import ServerProcess

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.slow,
    pytest.mark.skipif(
        not os.environ.get("CONSOLE_TEST_IMAGE"), reason="set CONSOLE_TEST_IMAGE=1 (make image)"
    ),
]


@pytest.fixture(scope="module")
def image() -> str:
    if missing := missing_tools():
        pytest.fail(f"CONSOLE_TEST_IMAGE is set but {', '.join(missing)} is not installed")
    return build_image()  # `make image` reports how long it took (its setup time)


@pytest.fixture
def containers(image: str) -> Iterator[Containers]:
    started = Containers(image)
    yield started
    started.remove()


@pytest.mark.timeout(1500)
def test_the_image_runs_serve_as_its_non_root_user_and_checks_readyz(
    image: str, containers: Containers
) -> None:
    user = dict(last_stage())["USER"]
    assert inspect(image, "{{.Config.User}}") == user
    configured = [*json.loads(inspect(image, "{{json .Config.Entrypoint}}"))]
    configured += json.loads(inspect(image, "{{json .Config.Cmd}}"))
    assert configured == entry_point()
    assert "/readyz" in inspect(image, "{{json .Config.Healthcheck.Test}}")
    assert containers.program("id", "--user", "--name") == "console"
    assert containers.program("id", "--user") == user.split(":")[0]
    assert containers.program("pwd") == "/var/lib/console"  # SQLite's console.db by default: a volume here


@pytest.mark.timeout(1500)
def test_the_image_migrates_serves_and_sends_a_call_a_person_answers(
    containers: Containers, empty_database: str, mrtr_http: ServerProcess, tmp_path: Path
) -> None:
    call = walk_a_call(containers, empty_database, mrtr_http.url, tmp_path)
    assert call["status"] == "completed", call
    assert call["result"]["content"][0]["text"] == "signed box ok=True"
