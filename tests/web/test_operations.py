"""What operators watch: `/healthz` (alive), `/readyz` (database and migrations ready), `/metrics` in the
Prometheus text format for a scraper holding the metrics token and nobody else, and JSON log lines that
name the call.
"""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import text as sql

from console.cli.common import JsonLines
from tests.harness import Console, Mrtr, running_console

pytestmark = pytest.mark.anyio

METRICS_TOKEN = "scrape-" + "m" * 24


async def scrape(console: Console) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """Each sample of /metrics by name and labels."""
    response = await console.client.get("/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    samples: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return samples


def value(samples: dict[str, Any], name: str, **labels: str) -> float:
    return float(samples.get(name, {}).get(tuple(sorted(labels.items())), 0.0))


async def test_healthz_is_alive_and_readyz_says_when_the_schema_is_behind(database_url: str) -> None:
    async with running_console(database_url, {}) as console:
        assert (await console.client.get("/healthz")).json() == {"status": "ok"}
        ready = await console.client.get("/readyz")
        assert (ready.status_code, ready.json()) == (200, {"status": "ready"})
        async with console.runtime.factory() as session:
            newest = (await session.execute(sql("SELECT version_num FROM alembic_version"))).scalar_one()
            await session.execute(sql("UPDATE alembic_version SET version_num = '0024'"))
            await session.commit()
        behind = await console.client.get("/readyz")
        assert behind.status_code == 503
        assert behind.json() == {"status": "migrations pending", "database": "0024", "newest": newest}


async def test_without_a_metrics_token_there_are_no_metrics(database_url: str) -> None:
    async with running_console(database_url, {}) as console:
        assert (await console.client.get("/metrics")).status_code == 404


async def test_metrics_need_the_metrics_token_and_show_calls_questions_and_latencies(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(
        database_url, {"mrtr": mrtr_memory.spec}, metrics_token=METRICS_TOKEN
    ) as console:
        for headers in ({}, console.auth("lead"), {"Authorization": f"Bearer {METRICS_TOKEN}x"}):
            refused = await console.client.get("/metrics", headers=headers)
            assert refused.status_code == 401, refused.text
            assert "console_calls" not in refused.text
        before = await scrape(console)
        call = await console.call("mrtr", "two_rounds", {"topic": "alpha"})
        waiting = await scrape(console)
        assert value(waiting, "console_questions_waiting", team="platform") == 1
        assert value(waiting, "console_calls", status="awaiting_input") == 1
        assert "console_dispatch_queue_depth" in waiting
        assert value(waiting, "process_resident_memory_bytes") > 0

        second = await console.answer_and_settle(call, "accept", {"name": "ada"})
        await console.answer_and_settle(second, "accept", {"amount": 1, "count": 2})
        after = await scrape(console)
        assert value(after, "console_questions_waiting", team="platform") == 0
        assert value(after, "console_calls", status="completed") == 1
        resumed = value(after, "console_answer_to_resume_seconds_count")
        assert resumed - value(before, "console_answer_to_resume_seconds_count") == 2  # one per round
        ended = value(after, "console_call_duration_seconds_count", status="completed")
        assert ended - value(before, "console_call_duration_seconds_count", status="completed") == 1


def test_json_log_lines_carry_the_call_id_and_the_traceback() -> None:
    logger = logging.getLogger("console.test")
    record = logger.makeRecord(
        "console.dispatch.worker",
        logging.WARNING,
        __file__,
        1,
        "call %s interrupted",
        ("c1",),
        None,
        extra={"call_id": "c1"},
    )
    line = json.loads(JsonLines().format(record))
    assert line["level"] == "warning"
    assert line["logger"] == "console.dispatch.worker"
    assert line["message"] == "call c1 interrupted"
    assert line["call_id"] == "c1"
    assert line["time"].endswith("+00:00")
    try:
        raise ValueError("boom")
    except ValueError:
        failed = logger.makeRecord("x", logging.ERROR, __file__, 1, "failed", (), sys.exc_info())
    shown = json.loads(JsonLines().format(failed))
    assert "call_id" not in shown
    assert "ValueError: boom" in shown["error"]
