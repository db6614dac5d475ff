"""A call and an answer walked through the console as compose.yaml deploys it: `migrate` once, then
`console` (serving, no dispatcher) and `worker` (sending), each started by a `Runner`: as plain processes
of the installed `console` command, or as containers of the image."""

from __future__ import annotations

import re
import socket
import subprocess
from contextlib import AbstractContextManager, ExitStack
from pathlib import Path
from typing import Any, Protocol

import anyio
import httpx

from tests.deploy.files import compose_services, health_check, on_address
from tests.harness import SECRET_KEY, TEAM, ServerSpec, seed
from tests.processes import read_lines

BOUND = 60.0  # each step; a loaded machine starts a container in seconds, a console in up to 60 s


class Runner(Protocol):
    def once(self, command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        """Run the image's entry point with `command` as its CMD to the end."""
        ...

    def serving(self, command: list[str], env: dict[str, str], log: Path) -> AbstractContextManager[str]:
        """Start the entry point with `command`; yields the first line it printed, stops it at the end."""
        ...

    def probe(self, argv: list[str]) -> int:
        """Run `argv` where the console runs (inside its container) and return its exit code."""
        ...


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def service(name: str, database_url: str) -> tuple[list[str], dict[str, str]]:
    """compose.yaml's `name` service: its command and environment, with the test's database in place of
    the compose PostgreSQL service (the containers share the host's network, where the test's is)."""
    spec = compose_services({"POSTGRES_PASSWORD": "unused", "CONSOLE_SECRET_KEY": SECRET_KEY})[name]
    env = {key: str(value) for key, value in spec["environment"].items()}
    assert env["CONSOLE_DATABASE_URL"].startswith("postgresql+psycopg://console:unused@postgres:5432/")
    env["CONSOLE_DATABASE_URL"] = database_url
    return list(spec["command"]), env


def walk_a_call(runner: Runner, database_url: str, mrtr_url: str, work: Path) -> dict[str, Any]:
    """Migrate the empty database, start `console` and `worker`, and have dev's agent call the MRTR server's
    `signed` tool and lead answer its question; returns the finished call as the agent reads it."""
    command, env = service("migrate", database_url)
    migrated = runner.once(command, env)
    assert migrated.returncode == 0, migrated.stdout[-3000:] + migrated.stderr[-3000:]
    assert "database upgraded to" in migrated.stdout, migrated.stdout
    tokens = anyio.run(seed, database_url, {"mrtr": ServerSpec(url=mrtr_url)})
    port = free_port()
    serve, serve_env = service("console", database_url)
    assert serve[0] == "serve", serve
    worker, worker_env = service("worker", database_url)
    with ExitStack() as running:
        line = running.enter_context(
            runner.serving(on_address(serve, "127.0.0.1", port), serve_env, work / "console.log")
        )
        assert line == f"listening on http://127.0.0.1:{port}", line
        started = running.enter_context(runner.serving(worker, worker_env, work / "worker.log"))
        assert re.fullmatch(r"worker \S+ started", started), started
        probe = [part.replace("127.0.0.1:8000", f"127.0.0.1:{port}") for part in health_check()]
        assert runner.probe(probe) == 0
        return _call_and_answer(f"http://127.0.0.1:{port}", tokens)


def _call_and_answer(base: str, tokens: dict[str, str]) -> dict[str, Any]:
    dev = {"Authorization": f"Bearer {tokens['dev']}"}
    lead = {"Authorization": f"Bearer {tokens['lead']}"}
    with httpx.Client(base_url=base, timeout=BOUND) as api:
        assert api.get("/readyz").json() == {"status": "ready"}
        run = api.post("/api/v1/runs", json={"team": TEAM, "title": "deployed"}, headers=dev)
        assert run.status_code == 201, run.text
        body = {
            "server": "mrtr",
            "method": "tools/call",
            "params": {"name": "signed", "arguments": {"item": "box"}},
        }
        # Only the worker sends (the console serves with --no-dispatcher): the question comes through it.
        asked = api.post(
            f"/api/v1/runs/{run.json()['id']}/calls", params={"wait": BOUND / 2}, json=body, headers=dev
        )
        assert asked.status_code == 202, asked.text
        call = asked.json()
        assert call["status"] == "awaiting_input", call
        question = call["pending"][0]["id"]
        answer = {"action": "accept", "content": {"ok": True}}
        answered = api.post(f"/api/v1/elicitations/{question}/answer", json=answer, headers=lead)
        assert answered.status_code == 200, answered.text
        done = api.get(f"/api/v1/calls/{call['id']}", params={"wait": BOUND / 2}, headers=dev)
        finished: dict[str, Any] = done.json()
        return finished


def lines_until_first(process: subprocess.Popen[bytes]) -> str:
    """The first line a started process prints (bounded), or what it said before it stopped."""
    assert process.stdout is not None
    return next(read_lines(process.stdout, BOUND), "")
