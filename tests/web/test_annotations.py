"""A tool as a gate page shows it: its title, and its annotations as badges (only hints sent as true or
false)."""

from __future__ import annotations

import mcp.types as types

from console.mcp.connection import ListedTool
from console.web.annotations import annotation_badges


def test_each_boolean_hint_becomes_a_badge_in_words() -> None:
    hints = {"destructiveHint": True, "idempotentHint": False, "openWorldHint": True, "readOnlyHint": False}
    assert annotation_badges(hints) == ["Destructive", "Not read-only", "Not idempotent", "Open world"]


def test_a_missing_or_non_boolean_hint_gets_no_badge() -> None:
    assert annotation_badges({"destructiveHint": "yes", "idempotentHint": None}) == []
    assert annotation_badges(["destructiveHint"]) == []


def test_a_tools_title_is_its_own_else_its_annotations() -> None:
    annotations = {"title": "Deploy a service"}
    listed = {"name": "deploy", "inputSchema": {"type": "object"}, "annotations": annotations}
    assert ListedTool.of(types.Tool.model_validate(listed)).title == "Deploy a service"
    assert ListedTool.of(types.Tool.model_validate({**listed, "title": "Deploy"})).title == "Deploy"
    assert ListedTool.of(types.Tool.model_validate({"name": "x", "inputSchema": {}})).title is None
