"""Jinja2 with template fragments, and the small filters the pages use."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import Response
from jinja2_fragments.fastapi import Jinja2Blocks

from console.db import utcnow
from console.web.invisible import reveal

TEMPLATES = Path(__file__).resolve().parent.parent.parent / "templates"
STATIC = TEMPLATES.parent / "static"


def age(moment: datetime | None) -> str:
    """'5 min ago'-style text for a past moment."""
    return "—" if moment is None else f"{_span((utcnow() - moment).total_seconds())} ago"


def time_left(moment: datetime | None) -> str:
    if moment is None:
        return "—"
    seconds = (moment - utcnow()).total_seconds()
    return "expired" if seconds <= 0 else f"{_span(seconds)} left"


def _span(seconds: float) -> str:
    seconds = max(0, int(seconds))
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit}"
    return f"{seconds} s"


def pretty_json(text_or_value: Any) -> str:
    """Indented JSON for display; the template escapes it like any other text."""
    value = json.loads(text_or_value) if isinstance(text_or_value, str) else text_or_value
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


def shorten(text: str, limit: int = 140) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def make_templates() -> Jinja2Blocks:
    templates = Jinja2Blocks(directory=str(TEMPLATES))
    env = templates.env
    env.autoescape = True
    env.filters.update(age=age, time_left=time_left, pretty_json=pretty_json, shorten=shorten)
    return templates


def render(
    request: Request, name: str, context: dict[str, Any], *, status: int = 200, block: str | None = None
) -> Response:
    """A page, or with `block` just that named fragment of it; hidden characters in its text are shown as
    markers (console/web/invisible.py)."""
    templates: Jinja2Blocks = request.app.state.templates
    response: Response = templates.TemplateResponse(
        request, name, context, status_code=status, block_name=block
    )
    body = bytes(response.body)
    shown = reveal(body.decode()).encode()
    if shown != body:
        response.body = shown
        response.headers["content-length"] = str(len(shown))
    return response
