"""Request bodies: none is read before the caller is known, and none past its route's cap, which is
enforced as the bytes stream in (413 as soon as it is passed, at once for a declared Content-Length)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import anyio
import httpx
import psutil
import pytest
from fastapi.routing import APIRoute

from console.app import WEB_ROUTERS
from console.web import api
from tests.harness import TEAM, running_console, seed, signed_in
from tests.processes import console_process

pytestmark = pytest.mark.anyio

MIB = 1024 * 1024
UPLOAD = 300 * MIB
PIECE = b"x" * MIB  # the upload is this one piece sent again and again, never held whole
# Before answering, a server that reads nothing can only have been sent what the kernel buffers.
SENT_BEFORE_ANSWER = 32 * MIB
RSS_GROWTH = 20 * MIB
WAIT = 60
FORM = "application/x-www-form-urlencoded"
PUBLIC_BODIES = {("POST", "/login")}  # the sign-in form is what authenticates


class CountedBody:
    """A request body that records how many of its chunks the app pulled."""

    def __init__(self) -> None:
        self.pulled = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for _ in range(4):
            self.pulled += 1
            yield b"x" * 1024


def _body_routes() -> list[tuple[str, str]]:
    """(method, path) of every route that may take a body, from the routers the app is made of."""
    routes: list[tuple[str, str]] = []
    for router in (api.router, *WEB_ROUTERS):
        for route in router.routes:
            assert isinstance(route, APIRoute), route
            routes.extend(
                (m, route.path) for m in route.methods or () if m in ("POST", "PUT", "PATCH", "DELETE")
            )
    return sorted(routes)


async def test_no_route_but_sign_in_reads_a_byte_of_its_body_before_it_knows_the_caller(
    database_url: str,
) -> None:
    async with running_console(database_url, {}) as console:
        routes = _body_routes()
        assert len(routes) >= 15
        assert set(routes) >= PUBLIC_BODIES
        for method, path in sorted(set(routes) - PUBLIC_BODIES):
            body = CountedBody()
            api = path.startswith("/api/")
            kind = "application/json" if api else FORM
            response = await console.client.request(
                method, re.sub(r"\{[^}]+\}", "x", path), content=body, headers={"Content-Type": kind}
            )
            if api:
                assert response.status_code == 401, (method, path, response.text)
            else:
                assert response.status_code == 303, (method, path, response.text)
                assert response.headers["location"].startswith("/login")
            assert body.pulled == 0, (method, path)


async def test_a_body_past_its_cap_is_refused_with_413_on_the_api_and_the_pages(database_url: str) -> None:
    async with running_console(database_url, {}) as console:
        runs = await console.client.post(
            "/api/v1/runs",
            json={"team": TEAM, "title": "x" * (64 * 1024)},
            headers=console.auth("dev"),
        )
        assert runs.status_code == 413
        assert runs.json()["error"]["code"] == "payload_too_large"
        async with signed_in(console, "dev") as dev:
            token = await dev.client.post("/tokens", data={"csrf_token": dev.csrf, "name": "x" * (64 * 1024)})
            assert token.status_code == 413
            tokens = await dev.client.get("/tokens")
            assert tokens.status_code == 200
            assert "x" * 100 not in tokens.text  # no token was made
        sign_in = await console.client.post("/login", data={"name": "dev", "password": "x" * (64 * 1024)})
        assert sign_in.status_code == 413


# --- a real `console serve` under a 300 MiB upload -----------------------------------------


@dataclass(frozen=True)
class Answer:
    status: int
    sent: int  # body bytes sent when the status line arrived


async def upload(
    base: str,
    path: str,
    headers: dict[str, str],
    *,
    chunked: bool,
    send: int = UPLOAD,
    after_each_piece: Callable[[], None] = lambda: None,
) -> Answer:
    """POST an UPLOAD-byte body (only `send` bytes of it are sent) as a raw HTTP/1.1 client that reads
    the answer while still sending, as httpx does not; returns once the status line is in."""
    url = urlsplit(base)
    assert url.hostname is not None
    assert url.port is not None
    framing = {"Transfer-Encoding": "chunked"} if chunked else {"Content-Length": str(UPLOAD)}
    fields = {"Host": url.netloc, "Content-Type": "application/json", **framing, **headers}
    head = f"POST {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in fields.items()) + "\r\n"
    answer: Answer | None = None
    sent = 0
    async with await anyio.connect_tcp(url.hostname, url.port) as stream:
        await stream.send(head.encode())
        async with anyio.create_task_group() as tg:

            async def read_status() -> None:
                nonlocal answer
                received = b""
                while b"\r\n" not in received:
                    received += await stream.receive()
                answer = Answer(int(received.split(b" ", 2)[1]), sent)
                tg.cancel_scope.cancel()

            tg.start_soon(read_status)
            while sent < send:
                piece = PIECE[: send - sent]
                await stream.send(b"%x\r\n%b\r\n" % (len(piece), piece) if chunked else piece)
                sent += len(piece)
                after_each_piece()
            await anyio.sleep_forever()  # everything meant to be sent is out: wait for the answer
    assert answer is not None
    return answer


def _serving() -> psutil.Process:
    [process] = [p for p in psutil.Process().children() if "serve" in p.cmdline()]
    return process


async def test_a_300_mib_upload_is_answered_before_it_is_read_and_the_console_stays_small(
    database_url: str, tmp_path: Path
) -> None:
    tokens = await seed(database_url, {})
    auth = {"Authorization": f"Bearer {tokens['dev']}"}
    with console_process(database_url, tmp_path / "console.txt", CONSOLE_MAX_PARAMS_BYTES=str(MIB)) as base:
        async with httpx.AsyncClient(base_url=base, timeout=WAIT) as http:
            warm = await http.post("/api/v1/runs", json={"team": TEAM, "title": "warm-up"}, headers=auth)
            assert warm.status_code == 201, warm.text
            run_id = warm.json()["id"]
        console = _serving()
        before = console.memory_info().rss
        peak = before

        def watch() -> None:
            nonlocal peak
            peak = max(peak, console.memory_info().rss)

        with anyio.fail_after(WAIT):
            tries = {
                "anonymous": await upload(base, "/api/v1/runs", {}, chunked=False, after_each_piece=watch),
                "anonymous, chunked": await upload(
                    base, "/api/v1/runs", {}, chunked=True, after_each_piece=watch
                ),
                "token, chunked": await upload(
                    base, "/api/v1/runs", auth, chunked=True, after_each_piece=watch
                ),
                "token, call, chunked": await upload(
                    base, f"/api/v1/runs/{run_id}/calls", auth, chunked=True, after_each_piece=watch
                ),
                "token, declared only": await upload(base, "/api/v1/runs", auth, chunked=False, send=0),
                "sign-in form": await upload(
                    base, "/login", {"Content-Type": FORM}, chunked=False, after_each_piece=watch
                ),
            }
        watch()
        statuses = {what: a.status for what, a in tries.items()}
        assert statuses == {
            "anonymous": 401,
            "anonymous, chunked": 401,
            "token, chunked": 413,
            "token, call, chunked": 413,
            "token, declared only": 413,
            "sign-in form": 413,
        }
        assert all(a.sent < SENT_BEFORE_ANSWER for a in tries.values()), tries
        assert peak - before < RSS_GROWTH, f"RSS grew by {(peak - before) / MIB:.1f} MiB"
        async with httpx.AsyncClient(base_url=base, timeout=WAIT) as http:
            assert (await http.get("/healthz")).status_code == 200
