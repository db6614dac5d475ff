"""Files the console creates that hold secrets: readable and writable by its own user only (0600)."""

from __future__ import annotations

import os
from pathlib import Path

PRIVATE = 0o600


def create_private(path: Path) -> bool:
    """Create `path` empty with mode 0600 unless it exists; whether it was created.

    The mode is set as the file comes into being, so no other user can open it in between.
    """
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE))
    except FileExistsError:
        return False
    return True


def write_private(path: Path, text: str) -> None:
    """Write `text` to a new file with mode 0600.

    Raises:
        FileExistsError: the file is already there (it is never overwritten).
    """
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE)
    with os.fdopen(descriptor, "w") as file:
        file.write(text)
