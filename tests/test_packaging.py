"""A plain install works: the wheel (built from the sdist) carries templates, static files and migrations."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import httpx
import pytest

from console import __version__
from tests.harness import html
from tests.processes import running_demo

REPO = Path(__file__).resolve().parent.parent
DATA = ("templates", "static", "migrations")
BUILD_TIMEOUT = 300
GIT = shutil.which("git")


def source_files() -> list[Path]:
    """The package's modules and data files in the checkout, relative to the repository."""
    found = [*(REPO / "console").rglob("*.py"), *(p for d in DATA for p in (REPO / d).rglob("*"))]
    return sorted(
        path.relative_to(REPO)
        for path in found
        if path.is_file() and "__pycache__" not in path.parts and path.name != ".gitkeep"
    )


def clean_copy(target: Path) -> Path:
    """The checkout's files as a fresh clone would have them (plus files not yet committed), without
    build leftovers: setuptools would put the files an old egg-info lists into the sdist."""
    listed = subprocess.run(
        [str(GIT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        if (REPO / name).is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, target / name)
    return target


def run(argv: list[str | Path], cwd: Path, env: dict[str, str]) -> None:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=BUILD_TIMEOUT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


@pytest.mark.slow
@pytest.mark.skipif(GIT is None, reason="copies the checkout's files with git")
def test_a_wheel_built_from_the_sdist_serves_the_demo_from_an_unrelated_folder(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CONSOLE_", "PYTHONPATH"))}
    source = clean_copy(tmp_path / "source")
    dist = tmp_path / "dist"
    run([sys.executable, "-m", "build", "--outdir", dist, source], source, env)  # the wheel from the sdist
    [sdist] = dist.glob("*.tar.gz")
    [wheel] = dist.glob("*.whl")
    with tarfile.open(sdist) as tar:
        in_sdist = {Path(*Path(name).parts[1:]) for name in tar.getnames()}
    with zipfile.ZipFile(wheel) as archive:
        in_wheel = {Path(name) for name in archive.namelist()}
    expected = source_files()
    assert [p for p in expected if p not in in_sdist] == []
    installed = [p if p.parts[0] == "console" else Path("console", *p.parts) for p in expected]
    assert [p for p in installed if p not in in_wheel] == []
    info = f"approval_console-{__version__}.dist-info"
    assert Path(info, "licenses", "LICENSE") in in_wheel
    with zipfile.ZipFile(wheel) as archive:
        metadata = archive.read(f"{info}/METADATA").decode()
    assert f"\nVersion: {__version__}\n" in metadata
    assert "\nLicense-Expression: Apache-2.0\n" in metadata

    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", venv], tmp_path, env)
    install: list[str | Path] = ["--python", venv / "bin" / "python", "install", "--quiet", "--no-compile"]
    run([sys.executable, "-m", "pip", *install, wheel], tmp_path, env)  # this pip, that venv: no pip there
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    run([venv / "bin" / "console", "teams", "add", "research"], elsewhere, env)
    version = subprocess.run(
        [venv / "bin" / "console", "--version"], capture_output=True, text=True, timeout=BUILD_TIMEOUT
    )
    assert version.stdout == f"console {__version__}\n", version
    with (
        running_demo([str(venv / "bin" / "console")], elsewhere, env) as demo,
        httpx.Client(base_url=demo.url, timeout=10) as client,
    ):
        assert client.get("/healthz").json() == {"status": "ok"}
        login = html(client.get("/login"))
        assets = [tag["href"] for tag in login.select("link[href]")] + [
            tag["src"] for tag in login.select("script[src]")
        ]
        static = sorted(str(url) for url in assets if str(url).startswith("/static/"))
        assert len(static) >= 4, static
        for url in static:
            served = client.get(url)
            assert served.status_code == 200, url
            assert served.content == (REPO / url.removeprefix("/")).read_bytes(), url


def test_the_changelogs_newest_release_is_the_version_the_code_names() -> None:
    """`console --version`, the package's metadata and CHANGELOG.md name the same release."""
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## \[([^\]]+)\]", changelog, flags=re.MULTILINE)
    assert headings[0] == "Unreleased"
    assert headings[1] == __version__
    assert (REPO / "LICENSE").read_text(encoding="utf-8").split()[:3] == ["Apache", "License", "Version"]
