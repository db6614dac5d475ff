"""A runaway PostgreSQL client: holds every connection the server will give it.

Run: python tests/faults/connection_hog.py CONNINFO

It prints `holding <n>` once the server gives no more, and from then on takes every connection that
frees up (a twentieth of a second apart). A line `evict` on stdin ends every other backend of the
database, whose places it takes too, and it prints `evicted <n>`. It closes them all and ends when stdin
closes or at SIGTERM.
"""

from __future__ import annotations

import sys
import threading

import psycopg

GRAB_PAUSE_SECONDS = 0.05
CONNECT_TIMEOUT_SECONDS = 2


def grab(conninfo: str, held: list[psycopg.Connection[tuple[object, ...]]]) -> None:
    """Connect until the server refuses."""
    while True:
        try:
            held.append(psycopg.connect(conninfo, autocommit=True, connect_timeout=CONNECT_TIMEOUT_SECONDS))
        except psycopg.OperationalError:
            return


def main() -> None:
    conninfo = sys.argv[1]
    held: list[psycopg.Connection[tuple[object, ...]]] = []
    grab(conninfo, held)
    print(f"holding {len(held)}", flush=True)  # noqa: T201  # what the test waits for
    stop = threading.Event()

    def keep_grabbing() -> None:
        while not stop.wait(GRAB_PAUSE_SECONDS):
            grab(conninfo, held)

    threading.Thread(target=keep_grabbing, daemon=True).start()
    for line in sys.stdin:
        if line.strip() == "evict":
            ours = [connection.info.backend_pid for connection in list(held)]
            ended = held[0].execute(
                # Materialized: the planner would otherwise end backends before it checks they are not ours.
                "WITH others AS MATERIALIZED (SELECT pid FROM pg_stat_activity"
                " WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> ALL(%s))"
                " SELECT count(*) FROM others WHERE pg_terminate_backend(pid)",
                (ours,),
            )
            row = ended.fetchone()
            print(f"evicted {row[0] if row else 0}", flush=True)  # noqa: T201  # likewise
    stop.set()


if __name__ == "__main__":
    main()
