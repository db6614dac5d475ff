"""Jinja2 with template fragments, and the small filters the pages use."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from functools import cache
from typing import Any

from fastapi import Request
from fastapi.responses import Response
from jinja2_fragments.fastapi import Jinja2Blocks
from markupsafe import Markup, escape

from console.db import utcnow
from console.resources import TEMPLATES
from console.runtime import runtime_of
from console.web.invisible import reveal


def age(moment: datetime | None) -> str:
    """'5 min ago'-style text for a past moment."""
    return "—" if moment is None else f"{_span((utcnow() - moment).total_seconds())} ago"


def time_left(moment: datetime | None) -> str:
    if moment is None:
        return "—"
    seconds = (moment - utcnow()).total_seconds()
    return "expired" if seconds <= 0 else f"{_span(seconds)} left"


def exact_time(moment: datetime) -> str:
    """The moment to the second, in UTC, as people read it."""
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def time_tag(moment: datetime | str | None, words: str | None = None) -> Markup:
    """`words` (by default how long ago) in a <time> element that carries the exact moment.

    An ISO 8601 text (as signed audit checkpoints keep it) is read as the moment it names.
    """
    if moment is None:
        return Markup("—")
    if isinstance(moment, str):
        try:
            parsed = datetime.fromisoformat(moment)
        except ValueError:
            return escape(moment)
        moment = parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed
    # Escaped one by one: `Markup.format` takes almost twice as long, and a page may show hundreds of these.
    when = escape(moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    exact, shown = escape(exact_time(moment)), escape(age(moment) if words is None else words)
    return Markup(f'<time datetime="{when}" title="{exact}">{shown}</time>')  # noqa: S704  # parts escaped


def left_tag(moment: datetime | None) -> Markup:
    return time_tag(moment, time_left(moment))


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


FOLD_CHARS = 120  # an argument shown longer than this is folded: its start, and the whole on demand


def folded_items(arguments: Any) -> list[tuple[str, str, str | None]]:
    """Each argument as (name, its value on one line, the whole value indented when the line was cut)."""
    if not isinstance(arguments, dict):
        return []
    items: list[tuple[str, str, str | None]] = []
    for name, value in arguments.items():
        line = json.dumps(value, ensure_ascii=False)
        if len(line) <= FOLD_CHARS:
            items.append((str(name), line, None))
        else:
            whole = json.dumps(value, indent=2, ensure_ascii=False)
            items.append((str(name), line[: FOLD_CHARS - 1] + "…", whole))
    return items


def shorten(text: str, limit: int = 140) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@cache
def make_templates() -> Jinja2Blocks:
    """The pages' templates, one set per process: every app in it renders the same files with the same
    filters, and each template is compiled once (compiling them all takes about 0.3 s of CPU), not once
    per app the tests create."""
    templates = Jinja2Blocks(directory=str(TEMPLATES))
    env = templates.env
    env.autoescape = True
    # Every time on a page is relative text inside <time datetime="..." title="exact time">.
    env.filters.update(
        age=time_tag,
        time_left=left_tag,
        exact_time=exact_time,
        pretty_json=pretty_json,
        shorten=shorten,
        folded_items=folded_items,
    )
    return templates


def render(
    request: Request, name: str, context: dict[str, Any], *, status: int = 200, block: str | None = None
) -> Response:
    """A page, or with `block` just that named fragment of it; hidden characters in its text are shown as
    markers (console/web/invisible.py)."""
    templates: Jinja2Blocks = runtime_of(request.app).templates
    response: Response = templates.TemplateResponse(
        request, name, context, status_code=status, block_name=block
    )
    body = bytes(response.body)
    shown = reveal(body.decode()).encode()
    if shown != body:
        response.body = shown
        response.headers["content-length"] = str(len(shown))
    return response
