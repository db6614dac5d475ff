"""A tool call in one sentence, worded by the console from the tool's name and the call's arguments."""

from __future__ import annotations

from typing import Any

import pytest

from console.calls.summary import summarise_call

DEPLOY = {"service": "billing", "version": "2.4.1", "environment": "production"}


@pytest.mark.parametrize(
    ("tool", "arguments", "sentence", "question"),
    [
        ("deploy", DEPLOY, "Deploy billing 2.4.1 to production", "Deploy billing to production?"),
        ("deploy", {"environment": "staging"}, "Deploy to staging", "Deploy to staging?"),
        (
            "send_email",
            {"to": "bob@example.com"},
            "Send email to bob@example.com",
            "Send email to bob@example.com?",
        ),
        (
            "create_issue",
            {"repo": "acme/web", "title": "Login fails on Safari", "labels": ["bug"]},
            "Create issue — repo acme/web, title Login fails on Safari (and 1 more argument)",
            "Create issue — repo acme/web?",
        ),
        (
            "scaleReplicas",
            {"replicas": 3},
            "Scale replicas — replicas 3",
            "Scale replicas — replicas 3?",
        ),
        ("restart", {}, "Restart", "Restart?"),
        ("restart", "not an object", "Restart", "Restart?"),
    ],
)
def test_the_sentence_names_the_tool_and_the_arguments_it_really_has(
    tool: str, arguments: Any, sentence: str, question: str
) -> None:
    summary = summarise_call(tool, arguments)
    assert (summary.sentence(), summary.question()) == (sentence, question)


def test_the_approve_button_says_what_happens() -> None:
    assert summarise_call("deploy", DEPLOY).approve_label() == "Approve and deploy"
    assert summarise_call("runSQL", {}).approve_label() == "Approve and run sql"


def test_long_values_are_cut_and_lists_are_counted_never_dumped() -> None:
    summary = summarise_call("write_file", {"path": "a.txt", "content": "x" * 500, "modes": [1, 2]})
    assert summary.sentence() == f"Write file — path a.txt, content {'x' * 39}… (and 1 more argument)"
    assert "[" not in summary.sentence()
