"""The README stays true: every setting is documented, and so is every CLI command."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import cast

from console.cli.main import build_parser
from console.config import Settings

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


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
