"""A tool's annotations as the badges a gate page shows ("Destructive", "Not idempotent"), read from what
the server listed; a hint the server left out, or sent as anything but true or false, gets no badge."""

from __future__ import annotations

from typing import Any

# (badge when true, badge when false), in the order a reader weighs them.
HINTS = {
    "destructiveHint": ("Destructive", "Not destructive"),
    "readOnlyHint": ("Read-only", "Not read-only"),
    "idempotentHint": ("Idempotent", "Not idempotent"),
    "openWorldHint": ("Open world", "Closed world"),
}


def annotation_badges(annotations: Any) -> list[str]:
    if not isinstance(annotations, dict):
        return []
    badges = []
    for hint, (yes, no) in HINTS.items():
        value = annotations.get(hint)
        if isinstance(value, bool):
            badges.append(yes if value else no)
    return badges
