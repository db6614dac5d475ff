"""The documentation site builds with --strict, says what the code says, and refuses a broken link."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from bs4 import BeautifulSoup
from mkdocs.exceptions import PluginError

from console.config import Settings
from tests.conftest import REPO

pytestmark = pytest.mark.slow
BUILD_SECONDS = 120


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"NO_MKDOCS_2_WARNING": "1"}
    argv = [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "--site-dir", str(site)]
    return subprocess.run(
        argv, cwd=config.parent, env=env, capture_output=True, text=True, timeout=BUILD_SECONDS, check=False
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("site")
    built = build(REPO / "mkdocs.yml", folder)
    assert built.returncode == 0, built.stderr[-5000:]
    return folder


def page(site: Path, path: str) -> BeautifulSoup:
    return BeautifulSoup((site / path / "index.html").read_text(), "html.parser")


def words(text: str) -> str:
    return " ".join(text.replace("`", "").split())


def test_the_configuration_page_lists_every_setting_with_its_description(site: Path) -> None:
    reference = page(site, "operations/configuration")
    for name, field in Settings.model_fields.items():
        variable = f"CONSOLE_{name.upper()}"
        anchor = reference.find(id=variable)
        assert anchor is not None, f"{variable} is not on the configuration page"
        row = anchor.find_parent("tr")
        assert row is not None
        cells = [words(cell.get_text()) for cell in row.find_all("td")]
        assert cells[0] == variable
        assert cells[3] == words(field.description or ""), variable
    secret = reference.find(id="CONSOLE_SECRET_KEY")
    assert secret is not None
    row = secret.find_parent("tr")
    assert row is not None
    assert [words(cell.get_text()) for cell in row.find_all("td")][1:3] == [
        "secret text, at least 32 characters",
        "—",
    ]


def test_the_performance_page_shows_the_committed_benchmark_run(site: Path) -> None:
    latest = json.loads((REPO / "benchmarks/results/latest.json").read_text())
    performance = page(site, "performance")
    text = words(performance.get_text())
    assert f"Measured on {latest['machine']['date']}" in text
    b1 = next(
        table for table in performance.find_all("table") if "direct (mcp SDK Client)" in table.get_text()
    )
    sqlite = latest["results"]["B1"]["databases"]["sqlite"]
    direct = [cell.get_text() for cell in b1.find_all("tr")[1].find_all("td")]
    assert direct[:3] == ["sqlite", "direct (mcp SDK Client)", f"{sqlite['direct_median_s'] * 1000:.1f}"]


def test_a_link_to_a_missing_page_or_anchor_fails_the_build(tmp_path: Path) -> None:
    # One page is enough (the others are warned about as missing from the nav), and the build stays quick.
    shutil.copy(REPO / "mkdocs.yml", tmp_path)
    for path in ("hooks/generated.py", "operations/configuration.md"):
        (tmp_path / "docs" / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / "docs" / path, tmp_path / "docs" / path)
    with (tmp_path / "docs/operations/configuration.md").open("a") as page:
        page.write("\nSee [the old page](no-such-page.md) and [a setting](#CONSOLE_NO_SUCH_SETTING).\n")
    broken = build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert broken.returncode != 0
    warnings = [line for line in broken.stderr.splitlines() if line.startswith("WARNING")]
    assert any(re.search(r"configuration\.md.*'no-such-page\.md'", line) for line in warnings), warnings
    assert any(re.search(r"configuration\.md.*'#CONSOLE_NO_SUCH_SETTING'", line) for line in warnings), (
        warnings
    )


def test_a_setting_without_a_description_stops_the_build(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = importlib.util.spec_from_file_location("generated", REPO / "docs/hooks/generated.py")
    assert spec is not None
    assert spec.loader is not None
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    monkeypatch.setattr(Settings.model_fields["round_cap"], "description", None)
    with pytest.raises(PluginError, match="the setting round_cap has no description"):
        hook.settings_reference(REPO)
