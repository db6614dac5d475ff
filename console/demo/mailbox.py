"""The demo's mailbox: an SMTP server (aiosmtpd) that accepts every message and keeps each one in a
folder as JSON ({"from", "to": [...], "data": the message as sent}), named in arrival order. The demo's
console sends its notification emails here and shows each person theirs on `/demo/mailbox`.

Run:
    python -m console.demo.mailbox FOLDER --port 0

It prints `listening on smtp://127.0.0.1:<port>` once it accepts connections.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from email import message_from_string
from email.message import EmailMessage
from email.policy import default
from pathlib import Path
from typing import Any

from aiosmtpd.smtp import SMTP, Envelope, Session

from console.listening import listening_socket

MAX_SHOWN = 100


class Keep:
    """Writes each accepted message to the folder, whole (written aside, then renamed)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.count = len(list(folder.glob("*.json")))

    # aiosmtpd calls it by this name.
    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        self.count += 1
        content: Any = envelope.content
        data = content.decode("utf-8", "replace") if isinstance(content, bytes) else str(content)
        kept = {"from": envelope.mail_from, "to": list(envelope.rcpt_tos), "data": data}
        part = self.folder / f"{self.count:06d}.json.part"
        part.write_text(json.dumps(kept))
        part.rename(self.folder / f"{self.count:06d}.json")
        return "250 Message accepted for delivery"


@dataclass(frozen=True)
class Kept:
    """A message as the mailbox page shows it."""

    subject: str
    date: str
    text: str


def kept_messages(folder: Path, address: str) -> list[Kept]:
    """The newest messages to `address`, newest first (at most `MAX_SHOWN`)."""
    shown: list[Kept] = []
    for path in sorted(folder.glob("*.json"), reverse=True):
        with contextlib.suppress(OSError, ValueError):
            kept = json.loads(path.read_text())
            if address not in kept["to"]:
                continue
            message = message_from_string(kept["data"], policy=default)
            assert isinstance(message, EmailMessage)  # noqa: S101  # the default policy's class
            body = message.get_body(("plain",))
            text = str(body.get_content()) if body is not None else ""
            shown.append(Kept(str(message["Subject"] or ""), str(message["Date"] or ""), text))
        if len(shown) >= MAX_SHOWN:
            break
    return shown


async def serve(folder: Path, port: int) -> None:
    sock = listening_socket("127.0.0.1", port)
    loop = asyncio.get_running_loop()
    handler = Keep(folder)
    server = await loop.create_server(lambda: SMTP(handler, hostname="mailbox.demo"), sock=sock)
    print(f"listening on smtp://127.0.0.1:{sock.getsockname()[1]}", flush=True)  # noqa: T201  # the announcement
    async with server:
        await server.serve_forever()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m console.demo.mailbox", description=__doc__)
    parser.add_argument("folder", type=Path)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    args.folder.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.folder, args.port))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
