"""What a receiver process of these tests kept: one JSON file per message in a folder, named in arrival
order. The processes are shared by the tests of a session, so a test reads from where the folder ended
when it began."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Kept:
    """The files of `folder` after the first `start`."""

    folder: Path
    start: int = 0

    @classmethod
    def from_now(cls, folder: Path) -> Kept:
        """What arrives from now on: the test's own messages, and not the earlier tests'."""
        return cls(folder, len(list(folder.glob("*.json"))))

    def paths(self) -> list[Path]:
        return sorted(self.folder.glob("*.json"))[self.start :]
