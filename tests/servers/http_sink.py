"""A real HTTP receiver for the notification tests: it answers every POST and writes each request to its
folder as JSON ({"path", "headers", "body"}), named in arrival order. The first HTTP_SINK_FAIL_FIRST
requests (default 0) are answered 503 instead, as a receiver that is down answers. A GET is answered 404
(it publishes nothing), so the console may also take it for a server and its authorization server, whose
token endpoint then keeps every request too.

Run:
    python tests/servers/http_sink.py FOLDER --port 0

It prints `listening on http://127.0.0.1:<port>` once it accepts connections.
"""

from __future__ import annotations

import argparse
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

MAX_BODY = 1024 * 1024


class Sink(ThreadingHTTPServer):
    def __init__(self, folder: Path, port: int, fail_first: int) -> None:
        super().__init__(("127.0.0.1", port), Handler)
        self.folder, self.fail_first, self.count = folder, fail_first, 0
        self.lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    server: Sink

    def do_POST(self) -> None:  # the handler's name for POST requests
        length = min(int(self.headers.get("Content-Length") or 0), MAX_BODY)
        body = self.rfile.read(length).decode("utf-8", "replace")
        with self.server.lock:
            self.server.count += 1
            count = self.server.count
        if count <= self.server.fail_first:
            self.send_response(503)
            self.end_headers()
            return
        kept = {"path": self.path, "headers": dict(self.headers.items()), "body": body}
        part = self.server.folder / f"{count:04d}.json.part"
        part.write_text(json.dumps(kept))
        part.rename(self.server.folder / f"{count:04d}.json")
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"ok")

    def do_GET(self) -> None:  # the handler's name for GET requests
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:  # the base class's name
        return


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("folder", type=Path)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    args.folder.mkdir(parents=True, exist_ok=True)
    sink = Sink(args.folder, args.port, int(os.environ.get("HTTP_SINK_FAIL_FIRST", "0")))
    print(f"listening on http://127.0.0.1:{sink.server_address[1]}", flush=True)  # noqa: T201  # the announcement
    sink.serve_forever()


if __name__ == "__main__":
    main()
