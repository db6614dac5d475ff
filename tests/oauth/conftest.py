"""Team notes processes for the OAuth tests, started once per session (per xdist worker)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack

import pytest

from tests.oauth.notes import Notes, NotesServers


@pytest.fixture(scope="session")
def notes_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NotesServers]:
    with ExitStack() as stack:
        yield NotesServers(tmp_path_factory.mktemp("notes"), stack)


@pytest.fixture
def notes(notes_servers: NotesServers) -> Notes:
    """Team notes as it is by default; its log shows this test's token events only."""
    return notes_servers()
