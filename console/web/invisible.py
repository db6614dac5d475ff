"""Invisible and direction-changing characters are shown as marked code points, never applied.

Text an MCP server sends (or anyone types) may carry right-to-left overrides and isolates, directional
marks, zero-width characters and other format (Cf) or control (Cc) characters that reorder or hide what a
person reads: "invoice‮fdp.exe" looks like "invoiceexe.pdf". Every rendered page and fragment passes
through `reveal`, which replaces each such character in the page's text with a visible `⟦U+202E⟧`
marker, in a `span.invisible-char` (plain marker text inside `<title>` and `<textarea>`, where markup is
not parsed). Tab, line feed and carriage return are ordinary layout and stay.

Attribute values are left exactly as they are: form values must go back to the server unchanged, and no
other attribute carries server text (templates/_macros/forms.html). Autoescaping guarantees that text
never contains a raw `<` or `>`, so every `<...>` in a page is the templates' own markup.
"""

from __future__ import annotations

import re
import unicodedata

from markupsafe import escape

KEPT = "\t\n\r"
RAW_TEXT = ("title", "textarea")  # elements whose content is text, not markup
SKIPPED = ("script", "style")  # our own code; never server text


def _character_class() -> str:
    # Format characters live in planes 0, 1 and 14 (the tag characters); controls in plane 0.
    code_points = (*range(0x20000), *range(0xE0000, 0xE1000))
    found = [c for c in code_points if unicodedata.category(chr(c)) in ("Cc", "Cf") and chr(c) not in KEPT]
    # As ranges of consecutive code points: a class of single characters made a search of a 60 KB page
    # take about 5 ms, ten times longer, on every page.
    runs: list[list[int]] = []
    for c in found:
        if runs and runs[-1][1] == c - 1:
            runs[-1][1] = c
        else:
            runs.append([c, c])
    return (
        "[" + "".join(re.escape(chr(a)) + ("" if a == b else "-" + re.escape(chr(b))) for a, b in runs) + "]"
    )


HIDDEN = re.compile(_character_class())
TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9]*)?[^>]*>")


def marker(char: str) -> str:
    """The visible stand-in for one hidden character, e.g. ⟦U+202E⟧."""
    return f"⟦U+{ord(char):04X}⟧"


def _marked(match: re.Match[str]) -> str:
    char = match.group()
    name = unicodedata.name(char, "")
    title = f' title="{escape(name)}"' if name else ""
    return f'<span class="invisible-char"{title}>{marker(char)}</span>'


def reveal(page: str) -> str:
    """`page` (HTML) with every hidden character of its text shown as a marker."""
    if HIDDEN.search(page) is None:
        return page
    out: list[str] = []
    lowered = page.lower()
    position, inside = 0, ""
    for tag in TAG.finditer(page):
        if tag.start() < position:
            continue  # inside a skipped element, copied already
        out.append(_text(page[position : tag.start()], inside))
        closing, name = tag.group(1) == "/", (tag.group(2) or "").lower()
        if not closing and name in SKIPPED:
            end = lowered.find(f"</{name}", tag.end())
            end = len(page) if end < 0 else end
            out.append(page[tag.start() : end])
            position = end
            continue
        out.append(tag.group())
        if name in RAW_TEXT:
            inside = "" if closing else name
        position = tag.end()
    out.append(_text(page[position:], inside))
    return "".join(out)


def _text(text: str, inside: str) -> str:
    if inside:
        return HIDDEN.sub(lambda m: marker(m.group()), text)
    return HIDDEN.sub(_marked, text)
