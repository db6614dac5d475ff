"""The vendored htmx and Swagger UI files are the pinned releases, unmodified, and the htmx config swaps 422
and 409."""

from __future__ import annotations

import hashlib
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader

REPO = Path(__file__).resolve().parent.parent.parent
VENDOR = REPO / "static" / "vendor"
HTMX = VENDOR / "htmx.min.js"
SSE = VENDOR / "htmx-ext-sse.js"
SWAGGER_UI = VENDOR / "swagger-ui-bundle.js"
SHA256_LINE = re.compile(r"(?P<digest>[0-9a-f]{64})  (?P<name>\S+)")


def _pins() -> tuple[dict[str, str], dict[str, str]]:
    """Package versions and file digests from VERSIONS.txt (`name version` and `sha256sum` lines)."""
    versions: dict[str, str] = {}
    digests: dict[str, str] = {}
    for line in (VENDOR / "VERSIONS.txt").read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        if match := SHA256_LINE.fullmatch(line):
            digests[match["name"]] = match["digest"]
        else:
            name, version = line.split()
            versions[name] = version
    return versions, digests


def test_vendored_htmx_is_the_pinned_2_0_release() -> None:
    versions, _ = _pins()
    embedded = re.findall(r'version:"([^"]+)"', HTMX.read_text())
    assert embedded == [versions["htmx.org"]]
    assert versions["htmx.org"].startswith("2.0.")


def test_vendored_sse_extension_is_a_2_x_release_that_registers_as_sse() -> None:
    versions, _ = _pins()
    assert versions["htmx-ext-sse"].startswith("2.")
    assert re.search(r"""htmx\.defineExtension\(\s*['"]sse['"]""", SSE.read_text())


def test_vendored_swagger_ui_is_the_pinned_5_x_release_with_its_license() -> None:
    versions, _ = _pins()
    embedded = re.findall(r'PACKAGE_VERSION:"([^"]+)"', SWAGGER_UI.read_text())
    assert embedded == [versions["swagger-ui-dist"]]
    assert versions["swagger-ui-dist"].startswith("5.")
    assert "Apache License" in (VENDOR / "LICENSE-swagger-ui.txt").read_text()
    assert "SmartBear" in (VENDOR / "NOTICE-swagger-ui.txt").read_text()


def test_every_vendored_script_and_stylesheet_matches_its_pinned_sha256() -> None:
    _, digests = _pins()
    files = [*VENDOR.glob("*.js"), *VENDOR.glob("*.css")]
    actual = {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in files}
    assert digests == actual
    assert {HTMX.name, SSE.name, SWAGGER_UI.name, "swagger-ui.css"} <= set(actual)


class _MetaConfig(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.contents: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag == "meta" and attributes.get("name") == "htmx-config":
            self.contents.append(attributes.get("content") or "")


def _htmx_config() -> dict[str, Any]:
    environment = Environment(loader=FileSystemLoader(REPO / "templates"), autoescape=True)
    parser = _MetaConfig()
    parser.feed(environment.get_template("_htmx_config.html").render())
    assert len(parser.contents) == 1
    config: dict[str, Any] = json.loads(parser.contents[0])
    return config


def _handling(config: dict[str, Any], status: int) -> dict[str, Any]:
    """The responseHandling entry htmx 2 picks: the first whose `code` regex matches (unanchored)."""
    for entry in config["responseHandling"]:
        if re.search(entry["code"], str(status)):
            handling: dict[str, Any] = entry
            return handling
    return {"swap": False}


def test_htmx_config_swaps_validation_errors_and_conflicts_but_flags_other_errors() -> None:
    config = _htmx_config()
    for status in (200, 201, 409, 422):
        assert _handling(config, status)["swap"] is True, status
        assert not _handling(config, status).get("error"), status
    for status in (400, 401, 403, 404, 429, 500, 502, 503):
        assert _handling(config, status) == {"code": "[45]..", "swap": False, "error": True}, status
    assert _handling(config, 204)["swap"] is False


def test_htmx_config_turns_off_eval_response_scripts_inline_styles_and_the_history_cache() -> None:
    config = _htmx_config()
    assert config["allowEval"] is False
    assert config["allowScriptTags"] is False
    assert config["selfRequestsOnly"] is True
    assert config["includeIndicatorStyles"] is False
    assert "style" not in config["attributesToSettle"]
    assert config["historyCacheSize"] == 0
