"""As the console stops, a request still open after the grace is ended: one whose response had not begun
gets a 503 in the API's error shape, one under way ends where it is."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from starlette.types import Message, Receive, Scope, Send

from console.runtime import Stopping
from console.web.stopping import EndedWhenStopping

pytestmark = pytest.mark.anyio
BOUND = 5  # seconds; the requests below end within milliseconds once the stop begins


async def _never_answers(scope: Scope, receive: Receive, send: Send) -> None:
    await anyio.sleep_forever()


async def _streams_forever(scope: Scope, receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"first", "more_body": True})
    await anyio.sleep_forever()


async def _request(app: Any, stopping: Stopping) -> list[Message]:
    """What the app sent for one GET while the console stops with no grace."""
    sent: list[Message] = []
    began = anyio.Event()

    async def receive() -> Message:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def send(message: Message) -> None:
        sent.append(message)

    async def run() -> None:
        began.set()
        await EndedWhenStopping(app, stopping=stopping)({"type": "http", "path": "/"}, receive, send)

    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(run)
            await began.wait()
            await anyio.wait_all_tasks_blocked()
            await stopping.stop_after(0)
    return sent


async def test_a_request_not_yet_answered_gets_a_503_in_the_apis_error_shape() -> None:
    stopping = Stopping(on_stop=lambda: None)
    start, body = await _request(_never_answers, stopping)
    assert (start["status"], dict(start["headers"])[b"retry-after"]) == (503, b"5")
    assert json.loads(body["body"]) == {
        "error": {"code": "stopping", "message": "The console is stopping; try again in a moment."}
    }


async def test_a_response_under_way_ends_where_it_is_and_on_stop_runs_first() -> None:
    stopped: list[str] = []
    stopping = Stopping(on_stop=lambda: stopped.append("waiters told"))
    start, first, last = await _request(_streams_forever, stopping)
    assert start["status"] == 200
    assert (first["body"], last["body"], last.get("more_body", False)) == (b"first", b"", False)
    assert stopped == ["waiters told"]
