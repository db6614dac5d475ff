"""How big a chaos run is: its length, processes, agents, approvers and kills."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Plan:
    seconds: float = 60.0  # of load; kills happen only then
    agents: int = 32
    approvers: int = 8
    serves: int = 3  # `console serve` processes, besides the one `console worker`
    kill_every: float = 10.0
    lease_seconds: int = 5  # CONSOLE_LEASE_SECONDS of every console process
    drain_seconds: float = 120.0  # after the load, how long agents may take to see their last call end
    seed: int = 0  # of the random choices: which process dies, rounds per request, accept or decline
