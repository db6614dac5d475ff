"""Where the templates, static files and migrations are, in an installed package and in a source checkout.

A wheel carries them inside the package (console/templates, console/static, console/migrations; see
pyproject.toml). In a source checkout and an editable install they stay at the top of the repository,
beside the package.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """The package's `name` folder (templates, static or migrations)."""
    inside = PACKAGE / name
    return inside if inside.is_dir() else PACKAGE.parent / name


TEMPLATES = data_dir("templates")
STATIC = data_dir("static")
MIGRATIONS = data_dir("migrations")
