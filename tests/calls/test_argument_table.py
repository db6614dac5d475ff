"""A call's arguments as rows people read, and an approver's change as before/after rows."""

from __future__ import annotations

from console.calls.argument_table import FOLD_CHARS, ArgumentRow, argument_rows


def shown(rows: list[ArgumentRow]) -> list[tuple[str, int, str | None, str | None, str]]:
    return [(r.name, r.depth, r.value, r.before, r.change) for r in rows]


def test_nested_values_are_indented_rows_and_plain_lists_one_line() -> None:
    rows = argument_rows(
        {
            "service": "billing",
            "limits": {"cpu": 2, "tags": ["a", "b"]},
            "hosts": [{"name": "h1"}],
            "on": True,
        }
    )
    assert shown(rows) == [
        ("service", 0, "billing", None, "same"),
        ("limits", 0, None, None, "same"),
        ("cpu", 1, "2", None, "same"),
        ("tags", 1, "a, b", None, "same"),
        ("hosts", 0, None, None, "same"),
        ("#1", 1, None, None, "same"),
        ("name", 2, "h1", None, "same"),
        ("on", 0, "true", None, "same"),
    ]


def test_a_long_value_shows_its_start_and_keeps_the_whole() -> None:
    [row] = argument_rows({"note": "y" * 500})
    assert row.value is not None
    assert (len(row.value), row.value.endswith("…"), row.full) == (FOLD_CHARS, True, "y" * 500)


def test_an_edit_marks_each_row_changed_added_or_removed() -> None:
    sent = {"service": "billing", "environment": "production", "dry_run": True}
    approved = {"service": "billing", "environment": "staging", "reason": "freeze"}
    assert shown(argument_rows(sent, approved, edited=True)) == [
        ("service", 0, "billing", None, "same"),
        ("environment", 0, "staging", "production", "changed"),
        ("reason", 0, "freeze", None, "added"),
        ("dry_run", 0, "true", None, "removed"),
    ]
