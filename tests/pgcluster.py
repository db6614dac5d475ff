"""A private PostgreSQL cluster that a test starts, stops and restarts itself, for faults that the shared
server of CONSOLE_TEST_POSTGRES_URL must never see (an outage, exhausted connections).

`private_cluster()` runs `initdb` into a fresh folder, listens on a free loopback port with trust
authentication, and removes it all afterwards. Run as root, the cluster belongs to and runs as the
`postgres` user (`runuser -u postgres --`), as PostgreSQL refuses to run as root. The programs are found
on PATH, else in `pg_config --bindir`; CONSOLE_PG_BIN names their folder instead.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg

from console.migrate import upgrade

WAIT_SECONDS = 60  # for pg_ctl to start or stop the server (a busy two-core machine)
DATABASE = "console"


@dataclass(frozen=True)
class Cluster:
    folder: Path  # holds the data directory, the socket and the server's log
    port: int
    run_as: tuple[str, ...]  # the command prefix that runs a program as the cluster's owner

    @property
    def data(self) -> Path:
        return self.folder / "data"

    @property
    def log(self) -> Path:
        return self.folder / "server.log"

    def url(self, database: str = DATABASE) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{database}"

    def conninfo(self, database: str = DATABASE) -> str:
        return f"host=127.0.0.1 port={self.port} user=postgres dbname={database}"

    def start(self) -> None:
        """Start the server and return once it accepts connections (bounded)."""
        self._pg_ctl("start", "-l", str(self.log))

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (`fast`: its sessions are ended; `immediate`: as if it crashed); return once
        it has (bounded)."""
        self._pg_ctl("stop", "-m", mode)

    def restart(self) -> None:
        self._pg_ctl("restart", "-m", "fast", "-l", str(self.log))

    def execute(self, sql: str, database: str = "postgres") -> None:
        with psycopg.connect(self.conninfo(database), autocommit=True) as connection:
            connection.execute(sql.encode())

    def _pg_ctl(self, action: str, *options: str) -> None:
        command = [*self.run_as, _program("pg_ctl"), action, "-D", str(self.data), "-w"]
        subprocess.run([*command, "-t", str(WAIT_SECONDS), *options], check=True, capture_output=True)


@contextmanager
def private_cluster(*, max_connections: int = 100) -> Iterator[Cluster]:
    """A running cluster with a migrated database `console`; stopped and removed afterwards."""
    # Not under pytest's tmp_path: its folders are private to root, and the server runs as postgres.
    folder = Path(tempfile.mkdtemp(prefix="console-pg-"))
    as_root = os.geteuid() == 0
    run_as: tuple[str, ...] = ("runuser", "-u", "postgres", "--") if as_root else ()
    if as_root:
        shutil.chown(folder, "postgres")
    cluster = Cluster(folder, _free_port(), run_as)
    try:
        subprocess.run(
            [
                *run_as,
                _program("initdb"),
                "-D",
                str(cluster.data),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
            ],
            check=True,
            capture_output=True,
        )
        settings = {
            "port": str(cluster.port),
            "listen_addresses": "'127.0.0.1'",
            "unix_socket_directories": f"'{folder}'",
            "max_connections": str(max_connections),
            "fsync": "off",  # a test's data need not outlive a power cut, and fsync is slow
            "shared_buffers": "16MB",
        }
        with (cluster.data / "postgresql.conf").open("a") as conf:
            conf.writelines(f"{name} = {value}\n" for name, value in settings.items())
        cluster.start()
        cluster.execute(f'CREATE DATABASE "{DATABASE}"')
        upgrade(cluster.url())
        yield cluster
    finally:
        if (cluster.data / "postmaster.pid").exists():
            cluster.stop("immediate")
        shutil.rmtree(folder, ignore_errors=True)


def _program(name: str) -> str:
    folder = os.environ.get("CONSOLE_PG_BIN")
    if folder:
        return str(Path(folder) / name)
    found = shutil.which(name)
    if found:
        return found
    pg_config = shutil.which("pg_config")
    if pg_config is None:
        raise FileNotFoundError(f"{name}: not on PATH, no pg_config, and CONSOLE_PG_BIN is not set")
    bindir = subprocess.run([pg_config, "--bindir"], check=True, capture_output=True, text=True).stdout
    return str(Path(bindir.strip()) / name)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port
