"""A real SMTP server for the notification tests (aiosmtpd): it accepts every message and writes each one
to its folder as JSON ({"from", "to": [...], "data": the message as sent}), named in arrival order.

Run:
    python tests/servers/smtp_sink.py FOLDER --port 0

It prints `listening on smtp://127.0.0.1:<port>` once it accepts connections.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
from pathlib import Path
from typing import Any

from aiosmtpd.smtp import SMTP, Envelope, Session


class Keep:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.count = 0

    # aiosmtpd calls it by this name.
    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        self.count += 1
        content: Any = envelope.content
        data = content.decode("utf-8", "replace") if isinstance(content, bytes) else str(content)
        kept = {"from": envelope.mail_from, "to": list(envelope.rcpt_tos), "data": data}
        written = self.folder / f"{self.count:04d}.json.part"
        written.write_text(json.dumps(kept))
        written.rename(self.folder / f"{self.count:04d}.json")  # whole files only
        return "250 Message accepted for delivery"


async def serve(folder: Path, port: int) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    handler = Keep(folder)
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: SMTP(handler, hostname="sink.test"), sock=sock)
    print(f"listening on smtp://127.0.0.1:{sock.getsockname()[1]}", flush=True)  # noqa: T201  # the announcement
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("folder", type=Path)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    args.folder.mkdir(parents=True, exist_ok=True)
    asyncio.run(serve(args.folder, args.port))


if __name__ == "__main__":
    main()
