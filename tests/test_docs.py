"""The documentation stays true: every CLI command is documented, every test the security model names as
a guard exists, and the README links only to pages that exist. (Every setting is listed in
docs/operations/configuration.md, which is generated from the settings class.)"""

from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path
from typing import cast

from console.cli.main import build_parser

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
GENERATED = {DOCS / "operations" / "configuration.md", DOCS / "compatibility.md"}
WRITTEN = "\n".join(page.read_text() for page in sorted(DOCS.rglob("*.md")) if page not in GENERATED)
README = (REPO / "README.md").read_text()


def _commands(parser: argparse.ArgumentParser, prefix: str) -> list[str]:
    subcommands = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subcommands:
        return [prefix]
    choices = cast(dict[str, argparse.ArgumentParser], subcommands[0].choices)
    return [c for name, sub in choices.items() for c in _commands(sub, f"{prefix} {name}")]


def test_every_cli_command_appears_in_the_docs() -> None:
    commands = _commands(build_parser(), "console")
    assert len(commands) >= 9
    missing = [command for command in commands if command not in WRITTEN]
    assert missing == []


def test_every_test_the_security_model_names_exists() -> None:
    page = (DOCS / "security.md").read_text()
    named = re.findall(r"`(tests/[\w/]+\.py)::(test_\w+)`", page)
    [(host_file, parametrized)] = re.findall(r"\(`(tests/[\w/]+\.py)::(test_\w+)\[…\]` is written", page)
    cases = [case for case in re.findall(r"`\[([^\]`]+)\]`", page) if case != "…"]
    assert len(named) >= 5
    assert len(cases) >= 10
    for path, name in [*named, (host_file, parametrized)]:
        tree = ast.parse((REPO / path).read_text())
        defined = {
            node.name for node in tree.body if isinstance(node, ast.AsyncFunctionDef | ast.FunctionDef)
        }
        assert name in defined, f"{path}::{name}"
    tried = re.findall(r'"([^"]+)": Attempt\(', (REPO / host_file).read_text())
    assert sorted(cases) == sorted(tried)  # each setting the test tries is listed, and only those


def test_the_readme_links_to_pages_that_exist() -> None:
    targets = [t.split("#")[0] for t in re.findall(r"\]\(([^)\s]+)\)", README) if "://" not in t]
    assert len(targets) >= 15
    missing = [t for t in targets if not (REPO / t).exists()]
    assert missing == []
