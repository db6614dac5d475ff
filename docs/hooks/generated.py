"""The parts of the site written from the code, at build time, so that they cannot drift from it.

An MkDocs hook (mkdocs.yml `hooks:`): each page below holds its marker once, and the build puts the
generated Markdown in its place. A missing marker, a setting without a description or a benchmark result
that is not a full `make bench` fails the build.
"""

from __future__ import annotations

import html
import json
import re
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import annotated_types
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.pages import Page
from pydantic import SecretStr
from pydantic.fields import FieldInfo

RESULTS = Path("benchmarks") / "results" / "latest.json"  # from the folder of mkdocs.yml
BENCHMARKS = ("B1", "B2", "B3", "B4", "B5", "B6", "B7")


def on_page_markdown(markdown: str, /, *, page: Page, config: MkDocsConfig, **_: Any) -> str:
    section = SECTIONS.get(page.file.src_uri)
    if section is None:
        return markdown
    name, generate = section
    marker = f"<!-- generated: {name} -->"
    if markdown.count(marker) != 1:
        raise PluginError(f"{page.file.src_uri} must hold the line {marker} once: the {name} go there")
    root = Path(config.config_file_path).parent
    return markdown.replace(marker, generate(root))


# The settings reference (docs/operations/configuration.md).


def settings_reference(root: Path) -> str:
    from console.config import Settings  # the console's own, as installed with the site's tools

    rows = ["| variable | type | default | what it does |", "|---|---|---|---|"]
    for name, field in Settings.model_fields.items():
        if not (field.description or "").strip():
            raise PluginError(
                f"console/config.py: the setting {name} has no description, so the settings reference "
                "cannot say what it does: give its Field a description"
            )
        variable = f"CONSOLE_{name.upper()}"
        cells = [
            f'<span id="{variable}"></span>`{variable}`',
            type_of(field),
            "—" if is_secret(field) else default_of(field),
            prose(field.description or "", linked=Settings.model_fields),
        ]
        rows.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(rows)


def is_secret(field: FieldInfo) -> bool:
    return SecretStr in _members(field.annotation)


def _members(annotation: Any) -> tuple[Any, ...]:
    """The types of a union without None, or the type itself."""
    if isinstance(annotation, types.UnionType):
        return tuple(member for member in get_args(annotation) if member is not type(None))
    return (annotation,)


NAMES: dict[Any, str] = {str: "text", int: "integer", float: "number", bool: "`true` or `false`"}


def type_of(field: FieldInfo) -> str:
    [kind] = _members(field.annotation)
    if kind is SecretStr:
        text = "secret text"
    elif get_origin(kind) is Literal:
        text = "one of " + ", ".join(f"`{choice}`" if choice else "empty" for choice in get_args(kind))
    else:
        text = NAMES[kind]
    limits = [_limit(constraint) for constraint in field.metadata]
    return ", ".join([text, *(limit for limit in limits if limit)])


def _limit(constraint: object) -> str:
    match constraint:
        case annotated_types.Gt(gt=bound):
            return f"more than {_number(bound)}"
        case annotated_types.Ge(ge=bound):
            return f"at least {_number(bound)}"
        case annotated_types.Lt(lt=bound):
            return f"less than {_number(bound)}"
        case annotated_types.Le(le=bound):
            return f"at most {_number(bound)}"
        case annotated_types.MinLen(min_length=size):
            return f"at least {size} characters"
        case annotated_types.MaxLen(max_length=size):
            return f"at most {size} characters"
    return ""


def _number(value: object) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def default_of(field: FieldInfo) -> str:
    value = field.default
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if value == "":
        return "empty"
    return f"`{_number(value)}`"


def prose(text: str, *, linked: dict[str, FieldInfo]) -> str:
    """A description as Markdown: code spans kept, the rest escaped, other settings' names linked."""
    known = {f"CONSOLE_{name.upper()}" for name in linked}
    pieces = re.split(r"(`[^`]*`)", text)
    for index in range(0, len(pieces), 2):
        piece = html.escape(pieces[index], quote=False)
        pieces[index] = re.sub(
            r"\bCONSOLE_[A-Z0-9_]+\b",
            lambda m: f"[`{m[0]}`](#{m[0]})" if m[0] in known else m[0],
            piece,
        )
    return "".join(pieces)


# The latest `make bench` (docs/performance.md), rendered by the benchmarks' own code.


def benchmark_results(root: Path) -> str:
    path = root / RESULTS
    if not path.is_file():
        raise PluginError(f"{RESULTS} is missing: run `make bench` and commit what it writes")
    found = json.loads(path.read_text())
    if found.get("quick"):
        raise PluginError(f"{RESULTS} is from a --quick run, which measures nothing: run `make bench`")
    missing = [name for name in BENCHMARKS if name not in found["results"]]
    if missing:
        raise PluginError(f"{RESULTS} lacks {', '.join(missing)}: commit a full `make bench`, not a part")
    renders = _renders(root)
    parts = [_machine(found["machine"]), targets(found["results"])]
    parts += [markdown_of(renders[name](found["results"][name])) for name in BENCHMARKS]
    return "\n\n".join(parts)


def _renders(root: Path) -> dict[str, Callable[[dict[str, Any]], str]]:
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))  # the benchmarks package sits beside mkdocs.yml
    from benchmarks import (
        b1_overhead,
        b2_latency,
        b3_inbox,
        b4_throughput,
        b5_holding,
        b6_gateway,
        b7_audit,
    )

    modules = (b1_overhead, b2_latency, b3_inbox, b4_throughput, b5_holding, b6_gateway, b7_audit)
    return {name: module.render for name, module in zip(BENCHMARKS, modules, strict=True)}


def _machine(machine: dict[str, Any]) -> str:
    postgres = machine.get("postgresql")
    return (
        f"Measured on {machine['date']}, in one run of `make bench` on one machine: "
        f"{machine['cpus']} cores ({_escape(machine['cpu'])}), {machine['memory_gib']} GiB of memory, "
        f"{_escape(machine['os'])}, CPython {machine['python']}"
        + (f", PostgreSQL {_escape(postgres)} on the same machine" if postgres else ", SQLite only")
        + "."
        + _load(machine)
    )


def _load(machine: dict[str, Any]) -> str:
    load = machine.get("load_average")
    if load is None:
        return ""
    return (
        f" The machine's load average (one minute) was {load['start']:.1f} when the run started and "
        f"{load['end']:.1f} when it ended, on {machine['cpus']} cores."
    )


def targets(results: dict[str, Any]) -> str:
    """Each target of docs/performance.md against this run, and whether it was met."""
    rows = [_b1(results["B1"]), _b2(results["B2"]), _b3(results["B3"]), _b4(results["B4"])]
    rows += [_b5(results["B5"]), _b6(results["B6"]), _b7(results["B7"])]
    lines = ["| | target | measured in this run | |", "|---|---|---|---|"]
    lines += [
        f"| {name} | {target} | {measured} | {'met' if met else '**missed**'} |"
        for name, target, measured, met in rows
    ]
    return "**Against the targets**\n\n" + "\n".join(lines)


Row = tuple[str, str, str, bool]
KINDS = {"sqlite": "SQLite", "postgres": "PostgreSQL"}


def _b1(result: dict[str, Any]) -> Row:
    found = result["databases"]
    measured = "; ".join(
        f"{KINDS[kind]} {f['ratio']:.2f}× direct, {f['over_floor']:.2f}× the floor "
        f"({f['floor_median_s'] / f['direct_median_s']:.2f}× direct itself)"
        for kind, f in found.items()
    )
    met = all(f["ratio"] <= 3 and f["over_floor"] <= 1.5 for f in found.values())
    return "B1", "≤ 3× direct and ≤ 1.5× the floor", measured, met


def _b2(result: dict[str, Any]) -> Row:
    p95 = {
        (kind, leg): found[leg]["from_answer_returned_s"]["p95"]
        for kind, found in result.items()
        for leg in ("plain", "channels")
    }
    measured = "; ".join(
        f"{KINDS[kind]} {p95[kind, 'plain'] * 1000:.1f} ms, "
        f"with channels {p95[kind, 'channels'] * 1000:.1f} ms"
        for kind in result
    )
    return "B2", "p95 ≤ 20 ms from the answer returning", measured, max(p95.values()) <= 0.020


def _b3(result: dict[str, Any]) -> Row:
    first = {
        kind: max(found["full"]["times_s"][page]["p95"] for page in ("api_first_page", "page_first"))
        for kind, found in result.items()
    }
    measured = "; ".join(
        f"{KINDS[kind]} {seconds * 1000:.1f} ms at {result[kind]['questions']:,} pending"
        for kind, seconds in first.items()
    )
    return "B3", "first page p95 ≤ 100 ms at 100,000 pending", measured, max(first.values()) <= 0.100


def _b4(result: dict[str, Any]) -> Row:
    legs = result["consoles"].get("postgres", [])
    best = max(legs, key=lambda leg: leg["per_second"], default=None)
    if best is None:
        return "B4", "≥ 100 round trips/s on PostgreSQL", "not measured (no PostgreSQL)", False
    bound = [f for f in result["floors"] if f["kind"] == "postgres"]
    names = {"floor": "the floor", "records": "the floor with the console's records"}
    floors = ", ".join(f"{names.get(f['leg'], f['leg'])} {f['per_second'] / 2:.1f}" for f in bound)
    measured = (
        f"at most {best['per_second']:.1f} round trips/s ({_count(best.get('processes', 1), 'process')}, "
        f"{_count(best['agents'], 'agent')}); what the floors allow: {floors}"
    )
    return "B4", "≥ 100 round trips/s on PostgreSQL", measured, best["per_second"] >= 100


def _count(number: int, thing: str) -> str:
    return (
        f"{number} {thing}"
        if number == 1
        else f"{number} {thing}es"
        if thing.endswith("s")
        else f"{number} {thing}s"
    )


def _b5(result: dict[str, Any]) -> Row:
    per_call = {who: result[who]["bytes_per_call"] / 1024 for who in ("console", "holding_open")}
    measured = (
        f"{per_call['console']:.1f} KiB per parked call against {per_call['holding_open']:.1f} KiB held "
        f"open: {result['memory_ratio']:.1f}×"
    )
    return "B5", "a waiting call ≥ 10× cheaper than one held open", measured, result["memory_ratio"] >= 10


def _b6(result: dict[str, Any]) -> Row:
    measured = (
        f"{result['console_median_s'] * 1000:.1f} ms against {result['target_s'] * 1000:.1f} ms "
        f"({result['ratio']:.2f}× direct, {result['over_floor']:.2f}× the floor)"
    )
    return "B6", "≤ 2× direct + 5 ms", measured, result["console_median_s"] <= result["target_s"]


def _b7(result: dict[str, Any]) -> Row:
    target = "the audit chain does not cap B4's target on PostgreSQL"
    found = result.get("postgres")
    if found is None:
        return "B7", target, "not measured (no PostgreSQL)", False
    most, needed = found["legs"][-1], found["target"]["needed_per_second"]
    measured = (
        f"{most['writers']} writers commit {most['audit_per_second']:.0f} events/s through the chain; "
        f"B4's target needs {needed:.0f} such commits/s"
    )
    return "B7", target, measured, most["audit_per_second"] >= needed


def markdown_of(text: str) -> str:
    """The plain-text tables of `benchmarks.stats.table` (a title, a header, a rule of dashes, rows of
    that width) as Markdown tables; every other line becomes a paragraph."""
    lines = text.splitlines()
    out: list[str] = []
    index = 0
    while index < len(lines):
        title, header, rule = (lines[index : index + 3] + ["", ""])[:3]
        spans = _columns(rule)
        if spans and len(header) == len(rule):
            rows = [_cells(header, spans)]
            index += 3
            while index < len(lines) and _is_row(lines[index], rule, spans):
                rows.append(_cells(lines[index], spans))
                index += 1
            table = [_row(rows[0]), "|" + "---|" * len(spans), *(_row(row) for row in rows[1:])]
            out.append(f"**{_escape(title)}**\n\n" + "\n".join(table))
        else:
            if lines[index].strip():
                out.append(_escape(lines[index].strip()))
            index += 1
    return "\n\n".join(out)


def _columns(rule: str) -> list[tuple[int, int]]:
    if not re.fullmatch(r"-+(  -+)*", rule):
        return []
    return [match.span() for match in re.finditer(r"-+", rule)]


def _is_row(line: str, rule: str, spans: list[tuple[int, int]]) -> bool:
    gaps = [line[end : end + 2] for _, end in spans[:-1]]
    return len(line) == len(rule) and all(gap == "  " for gap in gaps)


def _cells(line: str, spans: list[tuple[int, int]]) -> list[str]:
    return [line[start:end].strip() for start, end in spans]


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(_escape(cell) for cell in cells) + " |"


def _escape(text: str) -> str:
    return re.sub(r"([\\`*_\[\]|#])", r"\\\1", html.escape(text, quote=False))


# The audit actions (docs/audit.md).


def audit_actions(root: Path) -> str:
    from console.audit.actions import ACTIONS, Seen  # the console's own list, as record_event checks it

    seen = {Seen.TEAM: "the team's auditors and admins", Seen.SITE: "site admins only"}
    rows = ["| action | what one event records | who may see it |", "|---|---|---|"]
    for name in sorted(ACTIONS):
        action, anchor = ACTIONS[name], f'<span id="{name}"></span>'
        rows.append(f"| {anchor}`{name}` | {_escape(action.records)} | {seen[action.seen_by]} |")
    return "\n".join(rows) + "\n"


SECTIONS: dict[str, tuple[str, Callable[[Path], str]]] = {
    "audit.md": ("audit actions", audit_actions),
    "operations/configuration.md": ("settings", settings_reference),
    "performance.md": ("benchmark results", benchmark_results),
}
