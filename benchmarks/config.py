"""How much each benchmark does: the full run (`make bench`) and a quick one (the smoke test)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Sizes:
    warmup: int = 20
    repetitions: int = 5
    b1_calls: int = 60  # per side and repetition
    b2_round_trips: int = 200
    b3_runs: int = 1_000
    b3_questions: int = 100_000
    b3_requests: int = 40  # per page kind
    b4_seconds: float = 5.0
    b4_agents: tuple[int, ...] = (1, 8, 32)
    b4_processes: tuple[int, ...] = (1, 2, 4)
    b5_calls: int = 1_000
    b7_writers: tuple[int, ...] = (1, 4, 16)
    b7_seconds: float = 3.0
    b7_repetitions: int = 3
    b7_round_trips: int = 10


QUICK = Sizes(
    warmup=2,
    repetitions=1,
    b1_calls=3,
    b2_round_trips=3,
    b3_runs=4,
    b3_questions=40,
    b3_requests=2,
    b4_seconds=0.5,
    b4_agents=(1, 2),
    b4_processes=(1, 2),
    b5_calls=5,
    b7_writers=(1, 2),
    b7_seconds=0.3,
    b7_repetitions=1,
    b7_round_trips=2,
)
