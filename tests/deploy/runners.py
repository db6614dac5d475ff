"""The two ways tests start the image's entry point: as processes of the `console` command this checkout
installed (what the image runs, without the container), and as containers of a built image."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.deploy.walk import BOUND, lines_until_first
from tests.processes import stop_process

# The `console` script pip put beside this interpreter (`pip install -e .`, or the wheel): the image's
# ENTRYPOINT.
CONSOLE = Path(sys.executable).parent / "console"


def plain_environment(env: dict[str, str]) -> dict[str, str]:
    """This machine's environment without its CONSOLE_* settings, plus `env`: only what the image sets."""
    return {**{k: v for k, v in os.environ.items() if not k.startswith("CONSOLE_")}, **env}


class Processes:
    """The entry point as processes in `folder` (the image's working directory stands in for it)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def once(self, command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(CONSOLE), *command],
            cwd=self.folder,
            env=plain_environment(env),
            capture_output=True,
            text=True,
            timeout=BOUND,
            check=False,
        )

    @contextmanager
    def serving(self, command: list[str], env: dict[str, str], log: Path) -> Iterator[str]:
        with log.open("wb") as errors:
            process = subprocess.Popen(
                [str(CONSOLE), *command],
                cwd=self.folder,
                env=plain_environment(env),
                stdout=subprocess.PIPE,
                stderr=errors,
            )
        try:
            yield lines_until_first(process)
        finally:
            stop_process(process)
            if process.stdout is not None:
                process.stdout.close()

    def probe(self, argv: list[str]) -> int:
        return subprocess.run(argv, cwd=self.folder, timeout=BOUND, check=False).returncode
