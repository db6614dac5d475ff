"""A `console serve` process whose PostgreSQL database has no connection to give (another process holds
every one its limit allows) answers the API, the web pages and the MCP gateway with 503 and
`Retry-After`, and records and sends nothing of what it refused."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import psycopg
import pytest
from sqlalchemy.engine import make_url

from console.db import postgres_conninfo
from tests.harness import TEAM, seed, signed_call, stdio_mrtr
from tests.processes import console_process, read_log

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]

TIMEOUT = 30.0


@contextmanager
def _own_role(database_url: str) -> Iterator[str]:
    """The database's URL for a role of its own that is no superuser, so the database's connection limit
    applies to it (superusers pass every limit)."""
    role = f"console_r_{secrets.token_hex(4)}"
    url = make_url(database_url)
    with psycopg.connect(
        postgres_conninfo(database_url), autocommit=True
    ) as admin:  # grants are per database
        admin.execute(f'CREATE ROLE "{role}" LOGIN'.encode())
        admin.execute(f'GRANT ALL ON SCHEMA public TO "{role}"'.encode())
        admin.execute(f'GRANT ALL ON ALL TABLES IN SCHEMA public TO "{role}"'.encode())
        admin.execute(f'GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO "{role}"'.encode())
    try:
        yield url.set(username=role, password=None).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(_maintenance(database_url), autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{url.database}" WITH (FORCE)'.encode())
            admin.execute(f'DROP ROLE IF EXISTS "{role}"'.encode())


def _maintenance(database_url: str) -> str:
    return postgres_conninfo(make_url(database_url).set(database="postgres").render_as_string(False))


@contextmanager
def _every_connection_held(admin_url: str, role_url: str) -> Iterator[None]:
    """Another process (this test's) holds the one connection the database then allows; the console's own
    connections are ended, so each it needs must be opened anew, and is refused."""
    database = make_url(admin_url).database
    with (
        psycopg.connect(postgres_conninfo(role_url), autocommit=True) as holder,
        psycopg.connect(_maintenance(admin_url), autocommit=True) as admin,
    ):
        admin.execute(f'ALTER DATABASE "{database}" CONNECTION LIMIT 1'.encode())
        admin.execute(
            b"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> %s",
            (database, holder.info.backend_pid),
        )
        try:
            yield
        finally:
            admin.execute(f'ALTER DATABASE "{database}" CONNECTION LIMIT -1'.encode())


async def test_a_console_without_a_free_connection_answers_503_and_records_nothing(
    postgres_url: str, tmp_path: Path
) -> None:
    log = tmp_path / "requests.jsonl"
    tokens = await seed(postgres_url, {"mrtr": stdio_mrtr(log)})
    agent = {"Authorization": f"Bearer {tokens['dev']}"}
    with (
        _own_role(postgres_url) as role_url,
        console_process(role_url, tmp_path / "console.txt", CONSOLE_DATABASE_POOL_SIZE="2") as base,
    ):
        async with httpx.AsyncClient(base_url=base, timeout=TIMEOUT) as http:
            run = await http.post("/api/v1/runs", json={"team": TEAM, "title": "outage"}, headers=agent)
            assert run.status_code == 201, run.text
            calls = f"/api/v1/runs/{run.json()['id']}/calls"
            with _every_connection_held(postgres_url, role_url):
                refused = await http.post(
                    calls, params={"wait": 1}, json=signed_call("refused"), headers=agent
                )
                page = await http.get("/inbox", headers={"Cookie": "console_session=a-session"})
                gateway = await http.post(
                    "/mcp",
                    json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
                    headers={**agent, "Accept": "application/json, text/event-stream"},
                )
        with psycopg.connect(postgres_conninfo(postgres_url)) as admin:
            recorded = admin.execute(b"SELECT id FROM call WHERE run_id = %s", (run.json()["id"],)).fetchall()
    assert refused.status_code == 503, refused.text
    assert int(refused.headers["retry-after"]) > 0
    assert refused.json()["error"]["code"] == "database_unavailable"
    assert "try again" in refused.json()["error"]["message"]
    assert page.status_code == 503
    assert page.headers["retry-after"]
    assert "try again" in page.text
    assert gateway.status_code == 503
    assert gateway.headers["retry-after"]
    assert "try again" in gateway.json()["error"]["message"]
    # The refused call was neither recorded nor sent.
    assert recorded == []
    assert not log.exists() or read_log(log) == []
