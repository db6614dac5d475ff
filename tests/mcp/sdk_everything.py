"""The Python SDK's own everything-server example (`examples/servers/everything-server` of the `mcp`
package), run as the console's upstream server. The wheel leaves the examples out, so `example()` takes
them from the same version's source distribution on the package index into `.cache/` once; nothing of it
is copied into this repository. When that fails the tests using it skip, unless
CONSOLE_REQUIRE_SDK_EXAMPLES=1 (CI) makes that a failure."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tarfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import version
from pathlib import Path
from typing import IO

import pytest

from tests.cache_lock import cache_lock
from tests.processes import START_TIMEOUT, read_lines, stop_process

REPO = Path(__file__).resolve().parents[2]
REQUIRE_ENV = "CONSOLE_REQUIRE_SDK_EXAMPLES"
EXAMPLE = "examples/servers/everything-server/"
DOWNLOAD_TIMEOUT = 300.0


def example() -> Path:
    """The folder holding the example's `mcp_everything_server` package (fetched on first use)."""
    sdk = version("mcp")
    folder = REPO / ".cache" / f"mcp-{sdk}-everything-server"
    done = folder / "fetched"
    if done.exists():
        return folder
    with cache_lock(folder.name):
        if not done.exists():
            _fetch(folder, sdk)
            done.write_text(f"mcp=={sdk} {EXAMPLE}\n")
    return folder


def _fetch(folder: Path, sdk: str) -> None:
    download = folder.with_name(folder.name + "-download")
    try:
        shutil.rmtree(folder, ignore_errors=True)
        subprocess.run(  # the pinned SDK's own source distribution, from the package index
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:"]
            + ["--dest", str(download), f"mcp=={sdk}"],
            check=True,
            timeout=DOWNLOAD_TIMEOUT,
            capture_output=True,
        )
        [archive] = download.glob(f"mcp-{sdk}.tar.gz")
        prefix = f"mcp-{sdk}/{EXAMPLE}"
        with tarfile.open(archive) as tar:
            members = []
            for member in tar.getmembers():
                if member.name.startswith(prefix) and member.isfile():
                    member.name = member.name.removeprefix(prefix)
                    members.append(member)
            tar.extractall(folder, members=members, filter="data")
    except (OSError, subprocess.SubprocessError, ValueError, tarfile.TarError) as exc:
        output = (getattr(exc, "stderr", b"") or b"").decode(errors="replace")[-500:]
        reason = f"cannot fetch the everything-server example of mcp=={sdk}: {exc} {output}"
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{reason}; {REQUIRE_ENV}=1 requires it")
        pytest.skip(reason)
    finally:
        shutil.rmtree(download, ignore_errors=True)


@contextmanager
def running_example(stderr_path: Path) -> Iterator[str]:
    """The example serving Streamable HTTP on a free loopback port; yields its MCP URL."""
    with socket.socket() as probe:  # the example takes a port number, not 0
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "mcp_everything_server", "--port", str(port), "--log-level", "INFO"],
        cwd=example(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert process.stderr is not None
    drain = threading.Thread(target=_drain, args=(process.stderr, stderr_path), daemon=True)
    try:
        seen: list[str] = []
        for line in read_lines(process.stderr, START_TIMEOUT):
            seen.append(line)
            if "Uvicorn running on" in line:
                break
        else:
            raise RuntimeError("the everything-server example did not start:\n" + "\n".join(seen[-20:]))
        drain.start()  # from here on its log goes to `stderr_path`, so the pipe never fills up
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_process(process)
        if drain.is_alive():
            drain.join(timeout=10)  # it ends at the pipe's end, now that the process is gone
        else:
            process.stderr.close()


def _drain(stream: IO[bytes], path: Path) -> None:
    with stream, path.open("ab") as log:
        shutil.copyfileobj(stream, log)
