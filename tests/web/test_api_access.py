"""Every API route refuses callers without a valid token; health and the API description are public."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.harness import MRTR_SERVER, memory_mrtr, running_console

pytestmark = pytest.mark.anyio

PUBLIC = {"/healthz", "/api/v1/openapi.json", "/api/docs"}


def _routes(document: dict[str, Any]) -> list[tuple[str, str]]:
    """Every (method, path) of the API, from the app's own OpenAPI document."""
    return [(method.upper(), path) for path, item in document["paths"].items() for method in item]


async def test_every_api_route_requires_a_valid_token(database_url: str) -> None:
    async with running_console(database_url, {}) as console:
        document = (await console.client.get("/api/v1/openapi.json")).json()
        routes = [(m, p) for m, p in _routes(document) if p not in PUBLIC]
        assert len(routes) >= 10
        for method, path in routes:
            url = re.sub(r"\{[^}]+\}", "x", path)
            for headers in ({}, {"Authorization": "Bearer not-a-token"}, {"Authorization": "Basic abc"}):
                response = await console.client.request(method, url, headers=headers, json={})
                assert response.status_code == 401, (method, path, headers, response.text)
                assert response.json()["error"]["code"] == "unauthorized"


async def test_openapi_document_describes_the_agent_api(database_url: str) -> None:
    async with running_console(database_url, {}) as console:
        document = (await console.client.get("/api/v1/openapi.json")).json()
    paths = set(document["paths"])
    assert {
        "/api/v1/runs",
        "/api/v1/runs/{run_id}/calls",
        "/api/v1/calls/{call_id}",
        "/api/v1/elicitations",
        "/api/v1/elicitations/{elicitation_id}",
        "/api/v1/elicitations/{elicitation_id}/answer",
        "/api/v1/servers",
        "/api/v1/servers/{name}/tools",
    } <= paths
    call_body = document["paths"]["/api/v1/runs/{run_id}/calls"]["post"]["requestBody"]["content"]
    assert "server" in call_body["application/json"]["schema"]["properties"]
    [scheme] = document["components"]["securitySchemes"].values()
    assert (scheme["type"], scheme["scheme"]) == ("http", "bearer")
    operations = [
        op for path, item in document["paths"].items() if path not in PUBLIC for op in item.values()
    ]
    for operation in operations:
        assert operation["security"] == [{name: []} for name in document["components"]["securitySchemes"]]
        made_from_its_name = operation["operationId"].split("_api_v1")[0].replace("_", " ").title()
        assert operation["summary"] != made_from_its_name
        assert len(operation["summary"]) <= 60, operation["summary"]
        assert operation.get("description"), operation["summary"]  # what it does, in a sentence or two


async def test_the_server_list_names_no_stdio_command_line(database_url: str, tmp_path: Path) -> None:
    """A stdio server's arguments are the operator's: members learn its name, transport and protocol."""
    spec = memory_mrtr(tmp_path / "log.jsonl")
    async with running_console(database_url, {"mrtr": spec}) as console:
        listed = (await console.client.get("/api/v1/servers", headers=console.auth("dev"))).json()
    assert listed == [
        {"name": "mrtr", "transport": "stdio", "where": "", "protocol": "unknown", "pinned_protocol": None}
    ]
    assert MRTR_SERVER not in json.dumps(listed)
