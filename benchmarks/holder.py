"""A client that holds calls open while it waits for answers (the pre-2026 way), as its own process.

`python -m benchmarks.holder URL` connects (protocol 2025-11-25), prints `listening on ready`, then reads
commands from stdin: `hold N` starts N calls of the server's `hold` tool, whose elicitation/create each
waits for a person, and prints `holding N` once all N wait; `release` answers them all and prints
`released N` once every call completed.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import httpx2
import mcp.types as types
from mcp import Client
from mcp.client import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client


class People:
    """Stands in for the humans: every question waits until `release`."""

    def __init__(self) -> None:
        self.waiting = 0
        self.changed = anyio.Event()
        self.answer = anyio.Event()

    async def __call__(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        self.waiting += 1
        self.changed.set()
        await self.answer.wait()
        return types.ElicitResult(action="accept", content={"ok": True})

    async def until(self, count: int) -> None:
        while self.waiting < count:
            self.changed = anyio.Event()
            await self.changed.wait()


def say(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


async def main(url: str) -> None:
    limits = httpx2.Limits(max_connections=None, max_keepalive_connections=None)
    async with httpx2.AsyncClient(limits=limits, timeout=httpx2.Timeout(30, read=None)) as http:
        people = People()
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, mode="legacy", elicitation_callback=people) as client:
            say("listening on ready")
            stdin = anyio.wrap_file(sys.stdin)
            async for line in stdin:
                command, _, arg = line.strip().partition(" ")
                if command == "hold":
                    count = int(arg)
                    people.waiting, people.answer = 0, anyio.Event()
                    done: list[Any] = []

                    async def one(i: int, done: list[Any] = done) -> None:
                        done.append(await client.call_tool("hold", {"tag": f"h{i}"}))

                    async with anyio.create_task_group() as tg:
                        for i in range(count):
                            tg.start_soon(one, i)
                        await people.until(count)
                        say(f"holding {count}")
                        while (line := await stdin.readline()) and line.strip() != "release":
                            pass
                        people.answer.set()
                    say(f"released {len(done)}")


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])
