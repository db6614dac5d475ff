"""What operators watch, in the Prometheus text format (`/metrics`, console/web/health.py).

The counters and histograms here are kept as things happen: this process's own, or under
`console serve --workers N` (which sets PROMETHEUS_MULTIPROC_DIR) those of every process it serves from,
summed. The figures that live in the database (calls by status, questions waiting by team, the dispatch
queue) are read when scraped.
"""

from __future__ import annotations

import os

from prometheus_client import CollectorRegistry, Counter, Histogram, ProcessCollector
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

REGISTRY = CollectorRegistry(auto_describe=True)
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
DURATION_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 30.0, 60.0, 300.0, 1800.0, 3600.0, 86400.0)

ANSWER_TO_RESUME = Histogram(
    "console_answer_to_resume_seconds",
    "From the answer that completed a round to its resume being sent to the MCP server",
    buckets=LATENCY_BUCKETS,
    registry=REGISTRY,
)
CALL_DURATION = Histogram(
    "console_call_duration_seconds",
    "From a call's start to its end (waiting for people included), by how it ended",
    ["status"],
    buckets=DURATION_BUCKETS,
    registry=REGISTRY,
)
LEASE_EXPIRIES = Counter(
    "console_dispatch_lease_expiries",
    "Dispatch jobs whose claimer's lease ran out (a process died or stalled), taken over or interrupted",
    registry=REGISTRY,
)
NOTIFICATIONS_FAILED = Counter(
    "console_notifications_failed",
    "Notifications given up after their retries, by channel",
    ["channel"],
    registry=REGISTRY,
)


class Readings(Collector):
    """Gauges whose values a scrape reads from the database (console/reports/operations.py), then collects."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}
        self.waiting: dict[str, int] = {}
        self.queue = 0

    def collect(self) -> list[GaugeMetricFamily]:
        calls = GaugeMetricFamily("console_calls", "Calls by status", labels=["status"])
        for status, count in sorted(self.calls.items()):
            calls.add_metric([status], count)
        waiting = GaugeMetricFamily("console_questions_waiting", "Questions waiting by team", labels=["team"])
        for team, count in sorted(self.waiting.items()):
            waiting.add_metric([team], count)
        queue = GaugeMetricFamily("console_dispatch_queue_depth", "Dispatch jobs ready to be sent")
        queue.add_metric([], self.queue)
        return [calls, waiting, queue]


ProcessCollector(registry=REGISTRY)  # this process's memory, CPU time and open files


def kept_here() -> CollectorRegistry:
    """The counters and histograms to show: this process's, or with PROMETHEUS_MULTIPROC_DIR set every
    process's that writes there (the process figures then are those of the one answering)."""
    if "PROMETHEUS_MULTIPROC_DIR" not in os.environ:
        return REGISTRY
    every = CollectorRegistry()
    MultiProcessCollector(every)  # type: ignore[no-untyped-call]
    ProcessCollector(registry=every)
    return every
