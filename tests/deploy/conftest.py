"""What the deploy tests share: an empty PostgreSQL database, as a new deployment's is."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.conftest import POSTGRES_ENV, PostgresAdmin


@pytest.fixture
def empty_database(postgres: PostgresAdmin | None) -> Iterator[str]:
    """A new PostgreSQL database without the console's tables, as compose's PostgreSQL starts."""
    if postgres is None:
        if os.environ.get("CONSOLE_REQUIRE_POSTGRES"):
            pytest.fail(f"{POSTGRES_ENV} is not set but CONSOLE_REQUIRE_POSTGRES is")
        pytest.skip(f"set {POSTGRES_ENV} to run PostgreSQL tests")
    name = postgres.create(migrated=False)
    yield postgres.url_for(name)
    postgres.drop(name)
