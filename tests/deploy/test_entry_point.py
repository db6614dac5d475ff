"""The image's entry point run as the image runs it, without the container: compose.yaml's `migrate`,
`console` and `worker` commands with its environment, as the installed `console` command, on an empty
PostgreSQL database; a call waits for a person and finishes once answered. tests/deploy/test_image.py
walks the same path through the built image (`make image`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.deploy.runners import CONSOLE, Processes
from tests.deploy.walk import walk_a_call
from tests.processes import ServerProcess

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def test_the_entry_point_migrates_serves_and_sends_a_call_a_person_answers(
    empty_database: str, mrtr_http: ServerProcess, tmp_path: Path
) -> None:
    assert CONSOLE.exists(), "the console command is installed beside this interpreter"
    call = walk_a_call(Processes(tmp_path), empty_database, mrtr_http.url, tmp_path)
    assert call["status"] == "completed", call
    assert call["result"]["content"][0]["text"] == "signed box ok=True"
