"""What `console demo` keeps beside its database so that a restart finds its servers where it left them:
the tracker's and Team notes' ports and the tracker's state key (its waiting questions' links and signed
request states name them). A port another program took meanwhile is given up for a free one."""

from __future__ import annotations

import json
import secrets
from contextlib import suppress
from dataclasses import asdict, dataclass
from pathlib import Path

from console.files import write_private
from console.listening import listening_socket


@dataclass(frozen=True)
class KeptServers:
    tracker_port: int = 0
    notes_port: int = 0
    tracker_key: str = ""

    @classmethod
    def read(cls, path: Path) -> KeptServers:
        """The last run's (ports still free, else 0: any), or a fresh tracker key on the first run."""
        kept: dict[str, object] = {}
        with suppress(OSError, ValueError):
            loaded = json.loads(path.read_text())
            kept = loaded if isinstance(loaded, dict) else {}
        key = kept.get("tracker_key")
        return cls(
            tracker_port=_free_or_any(kept.get("tracker_port")),
            notes_port=_free_or_any(kept.get("notes_port")),
            tracker_key=key if isinstance(key, str) and key else secrets.token_urlsafe(32),
        )

    def write(self, path: Path) -> None:
        aside = path.with_name(path.name + ".part")
        aside.unlink(missing_ok=True)
        write_private(aside, json.dumps(asdict(self)))
        aside.replace(path)


def port_of(url: str) -> int:
    """The port of a server's loopback URL (http://127.0.0.1:<port>/...)."""
    return int(url.split("://", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])


def _free_or_any(port: object) -> int:
    if not isinstance(port, int) or not 0 < port < 65536:
        return 0
    try:
        listening_socket("127.0.0.1", port).close()
    except OSError:
        return 0
    return port
