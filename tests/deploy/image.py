"""The image as `make image` builds and runs it. No container registry can be reached from the machines
that test it, so its base is made from Debian packages: mmdebstrap writes a Debian bookworm tree with
python3, python3-venv and ca-certificates to a tarball (kept in .cache/image/), podman imports it, and the
Containerfile is built on it with BASE set to it. Containers share the host's network, where the test's
PostgreSQL and MCP server listen."""

from __future__ import annotations

import resource
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.cache_lock import cache_lock
from tests.deploy.files import CONTAINERFILE, REPO
from tests.deploy.walk import BOUND, lines_until_first
from tests.processes import stop_process

TOOLS = ("podman", "mmdebstrap", "runc")
PODMAN = shutil.which("podman") or "/usr/bin/podman"
MMDEBSTRAP = shutil.which("mmdebstrap") or "/usr/bin/mmdebstrap"
CACHE = REPO / ".cache" / "image"
BASE_TARBALL = CACHE / "debian-bookworm-python3.tar"
BASE = "localhost/approval-console-base:bookworm"
IMAGE = "localhost/approval-console:test"
BUILD_SECONDS = 1200.0  # a fresh base (about 2 minutes here) and a build that downloads every dependency
# The trust store of this machine, seen by the build's RUN steps only (not kept in the image): pip in the
# build reaches PyPI through whatever TLS proxy this machine trusts.
CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")


def missing_tools() -> list[str]:
    return [tool for tool in TOOLS if shutil.which(tool) is None]


def _run(argv: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=timeout, check=False, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 0, f"{argv[:3]} failed: {done.stdout[-3000:]}{done.stderr[-3000:]}"
    return done


def base_image() -> str:
    """The Debian base in podman's storage, its tarball made once and kept in .cache/image/."""
    with cache_lock("image"):
        if not BASE_TARBALL.exists():
            CACHE.mkdir(parents=True, exist_ok=True)
            partial = BASE_TARBALL.with_suffix(".partial.tar")
            packages = "--include=python3,python3-venv,ca-certificates"
            # No mirror named: mmdebstrap takes Debian's default one.
            _run([MMDEBSTRAP, "--variant=minbase", packages, "bookworm", str(partial)], BUILD_SECONDS)
            partial.rename(BASE_TARBALL)
        _run([PODMAN, "import", str(BASE_TARBALL), BASE], BOUND)
    return BASE


def build_image() -> str:
    """The Containerfile built on the local base. `--isolation chroot`: its RUN steps need no OCI runtime
    (crun refuses this machine's hybrid cgroup hierarchy); `--format docker` keeps the HEALTHCHECK (the
    OCI image format has no place for one)."""
    volume = ["--volume", f"{CA_BUNDLE}:{CA_BUNDLE}:ro"] if CA_BUNDLE.exists() else []
    argv = [PODMAN, "build", "--format", "docker", "--isolation", "chroot", *volume]
    argv += ["--build-arg", f"BASE={base_image()}", "--tag", IMAGE, "--file", str(CONTAINERFILE), str(REPO)]
    _run(argv, BUILD_SECONDS)
    return IMAGE


def inspect(image: str, template: str) -> str:
    return _run([PODMAN, "image", "inspect", "--format", template, image], BOUND).stdout.strip()


class Containers:
    """The entry point as containers of `image`, each with the host's network.

    runc, not Debian's default crun, which refuses this machine's hybrid cgroup hierarchy; and resource
    limits within this machine's own hard limits: podman's defaults as root are above them, and raising a
    limit needs a capability the machine does not give."""

    def __init__(self, image: str) -> None:
        self.image = image
        self.names: list[str] = []
        self.first_serving: str | None = None  # the console's: the walk starts it before the worker

    def _argv(
        self, name: str, command: list[str], env: dict[str, str], entrypoint: tuple[str, ...] = ()
    ) -> list[str]:
        files = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        # A read-only root file system (and a fresh /tmp), as deploy/kubernetes/ runs the image.
        argv = [
            PODMAN,
            "--runtime",
            "runc",
            "run",
            "--rm",
            "--name",
            name,
            "--network",
            "host",
            "--read-only",
        ]
        argv += ["--ulimit", f"nofile={files}:{files}", "--ulimit", "nproc=4096:4096", *entrypoint]
        for key, value in env.items():
            argv += ["--env", f"{key}={value}"]
        return [*argv, self.image, *command]

    def program(self, program: str, *args: str) -> str:
        """What `program` prints when the image is started with it in place of its entry point."""
        argv = self._argv(self._name(), list(args), {}, ("--entrypoint", program))
        done = subprocess.run(argv, capture_output=True, text=True, timeout=BOUND, check=False)
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout.strip()

    def _name(self) -> str:
        name = f"console-test-{len(self.names)}-{id(self):x}"
        self.names.append(name)
        return name

    def once(self, command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        argv = self._argv(self._name(), command, env)
        return subprocess.run(argv, capture_output=True, text=True, timeout=BOUND, check=False)

    @contextmanager
    def serving(self, command: list[str], env: dict[str, str], log: Path) -> Iterator[str]:
        name = self._name()
        self.first_serving = self.first_serving or name
        with log.open("wb") as errors:
            process = subprocess.Popen(self._argv(name, command, env), stdout=subprocess.PIPE, stderr=errors)
        try:
            yield lines_until_first(process)
        finally:
            subprocess.run(
                [PODMAN, "stop", "--time", "10", name], capture_output=True, timeout=BOUND, check=False
            )
            stop_process(process)
            if process.stdout is not None:
                process.stdout.close()

    def probe(self, argv: list[str]) -> int:
        assert self.first_serving is not None
        return subprocess.run(
            [PODMAN, "exec", self.first_serving, *argv], timeout=BOUND, check=False
        ).returncode

    def remove(self) -> None:
        for name in self.names:
            subprocess.run([PODMAN, "rm", "--force", name], capture_output=True, timeout=BOUND, check=False)
