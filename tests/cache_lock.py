"""One installer at a time per `.cache/` entry: the suite runs in several worker processes, and two of
them finding the same tool missing must not install it over each other."""

from __future__ import annotations

import fcntl
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WAIT_SECONDS = 900.0  # longer than any installer's own timeouts, which bound the holder
POLL_SECONDS = 0.2


@contextmanager
def cache_lock(name: str) -> Iterator[None]:
    """Held while this process installs `name`; another worker installing it is waited for."""
    path = REPO / ".cache" / f"{name}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + WAIT_SECONDS
    with path.open("a") as handle:
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"another test process held {path} for {WAIT_SECONDS:.0f} s") from None
                time.sleep(POLL_SECONDS)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
