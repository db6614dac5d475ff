"""The chaos report: one table per run, and one line per run to compare them."""

from __future__ import annotations

from collections.abc import Sequence

from benchmarks.chaos.checks import Report, longest_outage
from benchmarks.chaos.plan import Plan
from benchmarks.stats import table


def _longest(report: Report) -> str:
    return _seconds(report.takeovers)


def _seconds(values: list[float]) -> str:
    return f"{max(values):.1f} s" if values else "n/a"


def render(report: Report, plan: Plan, title: str) -> str:
    load = report.load
    restarts = [k.ready_at - k.at for k in report.kills]
    outage = longest_outage(report.kills, plan.serves + 1)
    rows: list[tuple[str, object]] = [
        ("agent requests (each with its own Idempotency-Key)", len(load.requests)),
        ("calls recorded", report.calls),
        ("  completed", report.statuses["completed"]),
        ("  waiting for an answer", report.statuses["awaiting_input"]),
        ("  interrupted", report.statuses["interrupted"]),
    ]
    rows += [(f"    {reason[:70]}", n) for reason, n in report.reasons.most_common()]
    rows += [("    ... though its sender lived on (its lease ran out first)", report.interrupted_alive)]
    others = sum(
        n
        for status, n in report.statuses.items()
        if status not in ("completed", "awaiting_input", "interrupted")
    )
    rows += [
        ("  in any other state", others),
        ("questions decided", report.decided),
        ("  answers approvers were told were taken (200)", len({a.question_id for a in load.answers})),
        ("  answers refused: another approver was first (409)", load.conflicts),
        ("  decided, in a call interrupted before its resume was confirmed", report.unknown_decisions),
        ("lost decisions", len(report.lost_decisions)),
        ("double resumes (server's count per rid and round)", len(report.double_resumes)),
        ("duplicate calls (server's first requests, database rows per rid)", len(report.duplicate_calls)),
        ("hung agents", len(report.hung_agents)),
        ("calls not ended as they must be", len(report.odd_calls)),
        ("other answers than expected", len(load.refused)),
        ("lost responses retried with the same key", load.tally.lost_responses),
        ("5xx answers retried", load.tally.server_errors),
        ("kills (SIGKILL, then started again)", len(report.kills)),
        ("  of", ", ".join(k.role for k in sorted(report.kills, key=lambda k: k.at)) or "-"),
        ("  longest from a SIGKILL to the process ready again", _seconds(restarts)),
        ("  longest while every console process was down", f"{outage:.1f} s"),
        ("jobs the killed processes held (claimed or being sent)", sum(len(k.held) for k in report.kills)),
        ("  never taken over", len(report.not_taken_over)),
        (f"longest kill-to-take-over (lease {plan.lease_seconds} s)", _longest(report)),
        ("  longest from the end of the dead process's lease", _seconds(report.after_lease)),
        ("console audit verify", "passed" if report.audit_ok else "FAILED"),
    ]
    text = table(title, ["what", "count"], rows)
    broken = report.broken()
    verdict = "every invariant held" if not broken else "BROKEN:\n  " + "\n  ".join(broken)
    return f"{text}\n{verdict}"


def summary(reports: Sequence[Report], plan: Plan) -> str:
    header = [
        "run",
        "calls",
        "completed",
        "waiting",
        "interrupted",
        "decisions",
        "lost decisions",
        "double resumes",
        "duplicate calls",
        "hung agents",
        "kills",
        "longest kill-to-take-over",
        "longest with every process down",
        "audit verify",
    ]
    rows = [
        [
            n,
            r.calls,
            r.statuses["completed"],
            r.statuses["awaiting_input"],
            r.statuses["interrupted"],
            r.decided,
            len(r.lost_decisions),
            len(r.double_resumes),
            len(r.duplicate_calls),
            len(r.hung_agents),
            len(r.kills),
            _longest(r),
            f"{longest_outage(r.kills, plan.serves + 1):.1f} s",
            "passed" if r.audit_ok else "FAILED",
        ]
        for n, r in enumerate(reports, 1)
    ]
    title = (
        f"Chaos: {plan.seconds:.0f} s each, {plan.serves} serve + 1 worker, {plan.agents} agents, "
        f"{plan.approvers} approvers, a SIGKILL every {plan.kill_every:.0f} s, lease {plan.lease_seconds} s"
    )
    return table(title, header, rows)
