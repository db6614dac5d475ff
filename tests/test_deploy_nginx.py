"""The nginx site of docs/operations/deploy.md (deploy/nginx.conf), run by a real nginx in front of two
console processes on one PostgreSQL database as if on two machines: agents and approvers reach either
through it and work goes on.

Only what a machine of ours cannot have is changed: the upstream addresses, a loopback port without TLS
instead of 443, and the redirect from port 80. Without nginx the test skips, unless CONSOLE_REQUIRE_NGINX=1
(CI) makes that a failure.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import anyio
import httpx
import pytest

from tests.harness import Console, running_console, stdio_mrtr
from tests.processes import console_process

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]

SITE = Path(__file__).parent.parent / "deploy" / "nginx.conf"
NGINX = shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if os.path.exists(p)), None)
BOUND = 60.0


@pytest.fixture
def nginx_binary() -> str:
    if NGINX is None:
        if os.environ.get("CONSOLE_REQUIRE_NGINX"):
            pytest.fail("nginx is not installed but CONSOLE_REQUIRE_NGINX is set")
        pytest.skip("nginx is not installed")
    return NGINX


def site_for(upstreams: list[str], port: int) -> str:
    """deploy/nginx.conf with this machine's addresses, served on a loopback port without TLS."""
    site = SITE.read_text()
    for placeholder, address in zip(("10.0.0.11:8000", "10.0.0.12:8000"), upstreams, strict=True):
        assert placeholder in site
        site = site.replace(placeholder, address.removeprefix("http://"))
    assert "listen 443 ssl;" in site
    site = site.replace("listen 443 ssl;", f"listen 127.0.0.1:{port};")
    site = "\n".join(line for line in site.splitlines() if "ssl_certificate" not in line)
    redirect = site.index("server {\n    listen 80;")
    return site[:redirect]


@contextmanager
def nginx(binary: str, site: str, work: Path) -> Iterator[subprocess.Popen[bytes]]:
    work.mkdir()
    config = work / "nginx.conf"
    config.write_text(
        f"daemon off;\nmaster_process off;\npid {work}/nginx.pid;\nerror_log {work}/error.log;\n"
        f"events {{}}\nhttp {{\naccess_log off;\nclient_body_temp_path {work}/body;\n"
        f"proxy_temp_path {work}/proxy;\n{site}\n}}\n"
    )
    process = subprocess.Popen([binary, "-p", str(work), "-c", str(config), "-e", str(work / "error.log")])
    try:
        yield process
    finally:
        process.terminate()
        process.wait(timeout=BOUND)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def until_served(client: httpx.AsyncClient, proxy: subprocess.Popen[bytes]) -> None:
    with anyio.fail_after(BOUND):
        while proxy.poll() is None:
            try:
                if (await client.get("/readyz")).status_code == 200:
                    return
            except httpx.TransportError:
                pass  # nginx is still starting
            await anyio.sleep(0.1)  # nginx says nothing once it listens
    pytest.fail(f"nginx exited with code {proxy.returncode}")


async def test_agents_and_approvers_work_through_the_sample_nginx_site_on_two_machines(
    postgres_url: str, tmp_path: Path, nginx_binary: str
) -> None:
    log = tmp_path / "requests.jsonl"
    async with running_console(postgres_url, {"mrtr": stdio_mrtr(log)}, dispatcher=False) as seeded:
        port = free_port()
        with ExitStack() as machines:
            trusting = {
                "CONSOLE_TRUSTED_PROXIES": "127.0.0.1",
                "CONSOLE_BASE_URL": f"http://127.0.0.1:{port}",
            }
            upstreams = [
                machines.enter_context(
                    console_process(postgres_url, tmp_path / f"console-{n}.txt", **trusting)
                )
                for n in (1, 2)
            ]
            proxy = machines.enter_context(nginx(nginx_binary, site_for(upstreams, port), tmp_path / "nginx"))
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=BOUND) as client:
                await until_served(client, proxy)
                through = Console(seeded.app, client, seeded.tokens)
                asking = await through.call("mrtr", "signed", {"item": "proxied"}, wait=BOUND / 2)
                assert asking["status"] == "awaiting_input", asking
                assert asking["pending"][0]["answer_url"].startswith(f"http://127.0.0.1:{port}/")
                done = await through.answer_and_settle(asking, "accept", {"ok": True})
                assert done["status"] == "completed", done
                assert done["result"]["content"][0]["text"] == "signed proxied ok=True"
                assert (await client.get("/metrics")).status_code == 404  # scraped on each machine
