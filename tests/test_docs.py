"""The README stays true: every setting is documented, and so is every CLI command; every test its
security model names as a guard exists."""

from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path
from typing import cast

from console.cli.main import build_parser
from console.config import Settings

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text()


def test_every_setting_is_documented_in_the_readme() -> None:
    missing = [name for name in Settings.model_fields if f"`CONSOLE_{name.upper()}`" not in README]
    assert missing == []


def _commands(parser: argparse.ArgumentParser, prefix: str) -> list[str]:
    subcommands = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subcommands:
        return [prefix]
    choices = cast(dict[str, argparse.ArgumentParser], subcommands[0].choices)
    return [c for name, sub in choices.items() for c in _commands(sub, f"{prefix} {name}")]


def test_every_cli_command_appears_in_the_readme() -> None:
    commands = _commands(build_parser(), "console")
    assert len(commands) >= 9
    missing = [command for command in commands if command not in README]
    assert missing == []


def test_every_test_the_security_model_names_exists() -> None:
    section = README.split("## Security model", 1)[1].split("\n## ", 1)[0]
    named = re.findall(r"`(tests/[\w/]+\.py)::(test_\w+)`", section)
    [(host_file, parametrized)] = re.findall(r"\(`(tests/[\w/]+\.py)::(test_\w+)\[…\]` is written", section)
    cases = [case for case in re.findall(r"`\[([^\]`]+)\]`", section) if case != "…"]
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
