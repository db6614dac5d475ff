"""MCP servers nobody here wrote, behind one console (each started by it over stdio, as an operator adds
them): the npm reference servers `server-filesystem` and `server-memory`, the PyPI reference servers
`mcp-server-time`, `-fetch`, `-git` and `-sqlite`, and small servers on `fastmcp` 2 and 4 and on the `mcp`
1.12 and 1.30 SDKs. For each: its tools as the agent API lists them, and a call with its real result;
for the SDK servers also a form question that a person answers through the console's API.

SQLite only (tests/interop/console.py says why); one console for the module."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.harness import ServerSpec, result_text
from tests.interop.console import Running, answer, call, module_console, settle
from tests.interop.foreign import node_tools, python_env
from tests.processes import serving_in_thread

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(900)]  # may install the packages

SERVERS = Path(__file__).resolve().parent / "servers"
PAGE = "<html><head><title>Tea</title></head><body><p>Steep green tea at 80 C.</p></body></html>"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


class Page(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # the name http.server calls
        body = PAGE.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # http.server's name
        pass


@pytest.fixture(scope="module")
def page() -> Iterator[str]:
    """A web page on loopback, for mcp-server-fetch (which fetches loopback only with --allow-private-ips)."""
    with serving_in_thread(Page) as base:
        yield base + "/tea.html"


def git_repository(folder: Path) -> Path:
    folder.mkdir()
    (folder / "README.md").write_text("interop\n")
    steps = (["init", "-q", "-b", "main"], ["add", "README.md"], ["commit", "-q", "-m", "First commit"])
    git = shutil.which("git")
    if git is None:
        pytest.fail("git is needed for mcp-server-git")
    for step in steps:
        subprocess.run(
            [git, "-c", "user.name=Ada", "-c", "user.email=ada@example.com", *step], cwd=folder, check=True
        )
    (folder / "notes.txt").write_text("untracked\n")
    return folder


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What the servers work on: a folder for server-filesystem, a git repository, a place for data."""
    folder = tmp_path_factory.mktemp("interop-servers")
    shared = folder / "shared"
    shared.mkdir()
    (shared / "hello.txt").write_text("hello from disk\n")
    git_repository(folder / "repo")
    return folder


@pytest.fixture(scope="module")
def running(files: Path, sqlite_template: Path, page: str) -> Iterator[Running]:
    node = node_tools()
    reference = python_env("reference-servers")
    sqlite = python_env("mcp-server-sqlite")
    servers = {
        "filesystem": ServerSpec(command=[*node.bin("mcp-server-filesystem"), str(files / "shared")]),
        "memory": ServerSpec(
            command=node.bin("mcp-server-memory"), env={"MEMORY_FILE_PATH": str(files / "memory.jsonl")}
        ),
        "time": ServerSpec(command=[str(reference / "mcp-server-time"), "--local-timezone", "UTC"]),
        "fetch": ServerSpec(
            command=[str(reference / "mcp-server-fetch"), "--ignore-robots-txt", "--allow-private-ips"]
        ),
        "git": ServerSpec(command=[str(reference / "mcp-server-git"), "--repository", str(files / "repo")]),
        "sqlite": ServerSpec(
            command=[str(sqlite / "mcp-server-sqlite"), "--db-path", str(files / "data.db")]
        ),
    }
    for name, env, program in (
        ("fastmcp2", "fastmcp-2", "fastmcp_server.py"),
        ("fastmcp4", "fastmcp-4", "fastmcp_server.py"),
        ("mcp112", "mcp-1.12", "mcp1_server.py"),
        ("mcp130", "mcp-1.30", "mcp1_server.py"),
    ):
        servers[name] = ServerSpec(command=[str(python_env(env) / "python"), str(SERVERS / program)])
    with module_console(files, sqlite_template, servers) as console:
        yield console


@pytest.fixture
async def api(running: Running) -> AsyncIterator[httpx.AsyncClient]:
    async with running.api() as client:
        yield client


async def tools(api: httpx.AsyncClient, running: Running, server: str) -> set[str]:
    response = await api.get(f"/api/v1/servers/{server}/tools", headers=running.auth("dev"))
    assert response.status_code == 200, response.text
    return {tool["name"] for tool in response.json()}


async def protocol(api: httpx.AsyncClient, running: Running, server: str) -> str:
    response = await api.get("/api/v1/servers", headers=running.auth("dev"))
    assert response.status_code == 200, response.text
    return str(next(s["protocol"] for s in response.json() if s["name"] == server))


async def text(api: httpx.AsyncClient, running: Running, server: str, tool: str, arguments: Any) -> str:
    return result_text(await call(api, running, server, tool, arguments))


async def test_server_filesystem_lists_a_folder_and_reads_a_file(
    api: httpx.AsyncClient, running: Running, files: Path
) -> None:
    assert {"list_directory", "read_text_file"} <= await tools(api, running, "filesystem")
    listed = await text(api, running, "filesystem", "list_directory", {"path": str(files / "shared")})
    assert "[FILE] hello.txt" in listed
    read = await text(api, running, "filesystem", "read_text_file", {"path": str(files / "shared/hello.txt")})
    assert read == "hello from disk\n"
    assert await protocol(api, running, "filesystem") == "2025-11-25"


async def test_server_memory_creates_an_entity_and_reads_it_back(
    api: httpx.AsyncClient, running: Running
) -> None:
    assert {"create_entities", "open_nodes"} <= await tools(api, running, "memory")
    entity = {"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]}
    await text(api, running, "memory", "create_entities", {"entities": [entity]})
    found = json.loads(await text(api, running, "memory", "open_nodes", {"names": ["Ada"]}))
    assert [(e["name"], e["observations"]) for e in found["entities"]] == [
        ("Ada", ["wrote the first program"])
    ]
    assert await protocol(api, running, "memory") == "2025-11-25"


async def test_mcp_server_time_tells_the_time_in_a_fixed_zone(
    api: httpx.AsyncClient, running: Running
) -> None:
    assert {"get_current_time", "convert_time"} <= await tools(api, running, "time")
    told = json.loads(await text(api, running, "time", "get_current_time", {"timezone": "Asia/Tokyo"}))
    assert told["timezone"] == "Asia/Tokyo"
    assert told["datetime"].endswith("+09:00")
    assert await protocol(api, running, "time") == "2026-07-28"


async def test_mcp_server_fetch_fetches_a_page_on_loopback(
    api: httpx.AsyncClient, running: Running, page: str
) -> None:
    assert await tools(api, running, "fetch") == {"fetch"}
    fetched = await text(api, running, "fetch", "fetch", {"url": page})
    assert "Steep green tea at 80 C." in fetched
    assert await protocol(api, running, "fetch") == "2026-07-28"


async def test_mcp_server_git_reports_status_and_log(
    api: httpx.AsyncClient, running: Running, files: Path
) -> None:
    assert {"git_status", "git_log"} <= await tools(api, running, "git")
    repo = str(files / "repo")
    assert "notes.txt" in await text(api, running, "git", "git_status", {"repo_path": repo})
    assert "First commit" in await text(api, running, "git", "git_log", {"repo_path": repo})
    assert await protocol(api, running, "git") == "2026-07-28"


async def test_mcp_server_sqlite_creates_a_table_and_queries_it(
    api: httpx.AsyncClient, running: Running
) -> None:
    assert {"create_table", "write_query", "read_query"} <= await tools(api, running, "sqlite")
    await text(api, running, "sqlite", "create_table", {"query": "CREATE TABLE teas (name TEXT, grams INT)"})
    await text(api, running, "sqlite", "write_query", {"query": "INSERT INTO teas VALUES ('sencha', 3)"})
    rows = await text(api, running, "sqlite", "read_query", {"query": "SELECT name, grams FROM teas"})
    assert rows == "[{'name': 'sencha', 'grams': 3}]"
    assert await protocol(api, running, "sqlite") == "2025-11-25"


async def confirm_through_the_api(api: httpx.AsyncClient, running: Running, server: str) -> dict[str, Any]:
    """Call `server`'s confirm tool; lead accepts its question (ok) through the API; the call as it ends."""
    waiting = await call(api, running, server, "confirm", {"item": "ship"})
    assert waiting["status"] == "awaiting_input", waiting
    question = waiting["pending"][0]
    assert question["message"] == "Ship ship?"
    await answer(api, running, question["id"], "accept", {"ok": True})
    return await settle(api, running, waiting["id"], waiting["round"])


@pytest.mark.parametrize("server", ["fastmcp2", "mcp130", "mcp112"])
async def test_an_sdk_server_answers_a_call_and_a_form_question_a_person_answers(
    api: httpx.AsyncClient, running: Running, server: str
) -> None:
    assert await tools(api, running, server) == {"greet", "confirm"}
    assert await text(api, running, server, "greet", {"name": "ada"}) == "hello ada"
    assert result_text(await confirm_through_the_api(api, running, server)) == "ship: accept ok=True"
    assert await protocol(api, running, server) == ("2025-06-18" if server == "mcp112" else "2025-11-25")


async def test_a_fastmcp_4_server_answers_a_call(api: httpx.AsyncClient, running: Running) -> None:
    assert await tools(api, running, "fastmcp4") == {"greet", "confirm"}
    assert await text(api, running, "fastmcp4", "greet", {"name": "ada"}) == "hello ada"
    assert await protocol(api, running, "fastmcp4") == "2026-07-28"
