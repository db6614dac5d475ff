"""The address check every connection to a server that is not internal goes through."""

from __future__ import annotations

import ipaddress

import anyio
import httpx2
import pytest

from console.mcp.addresses import IPAddress, public_only_transport, refusal
from tests.processes import recorder

pytestmark = pytest.mark.anyio


def test_every_kind_of_address_a_server_may_not_use_is_named() -> None:
    kinds = {
        "127.0.0.1": "a loopback address",
        "::1": "a loopback address",
        "169.254.169.254": "a link-local address",
        "fe80::1": "a link-local address",
        "10.0.0.1": "a private address",
        "192.168.1.1": "a private address",
        "172.16.0.1": "a private address",
        "fd00::2": "a unique-local address",
        "::ffff:10.0.0.1": "a private address",
        "100.64.0.1": "a non-public address",
        "192.0.2.2": "a private address",  # documentation addresses count as private
        "0.0.0.0": "a private address",  # noqa: S104  # an address to refuse, not one to bind
        "224.0.0.1": "a non-public address",
        "8.8.8.8": None,
        "2606:4700:4700::1111": None,
    }
    assert {text: refusal(ipaddress.ip_address(text)) for text in kinds} == kinds


async def test_a_connection_goes_to_an_address_that_was_checked_and_keeps_the_host_name() -> None:
    checked: list[str] = []

    def loopback_counts_as_public(address: IPAddress) -> str | None:
        checked.append(str(address))
        return None if address.is_loopback else "not loopback"

    with recorder() as server:
        port = server.url.split(":")[2].split("/")[0]
        transport = public_only_transport(loopback_counts_as_public)
        async with httpx2.AsyncClient(transport=transport) as client:
            with anyio.fail_after(10):
                url = f"http://localhost:{port}/mcp"
                async with client.stream("POST", url, headers={"X-Api-Key": "k"}) as response:
                    peer = response.extensions["network_stream"].get_extra_info("server_addr")
    assert response.status_code == 401
    assert peer[0] in checked
    assert [(seen["host"], seen["x-api-key"]) for seen in server.seen] == [(f"localhost:{port}", "k")]


async def test_a_name_with_an_address_that_is_not_allowed_gets_no_request() -> None:
    with recorder() as server:
        port = server.url.split(":")[2].split("/")[0]
        async with httpx2.AsyncClient(transport=public_only_transport()) as client:
            for host in ("localhost", "127.0.0.1"):
                with anyio.fail_after(10), pytest.raises(httpx2.ConnectError, match="a loopback address"):
                    await client.post(f"http://{host}:{port}/mcp", headers={"X-Api-Key": "k"})
            with anyio.fail_after(10), pytest.raises(httpx2.ConnectError, match="cannot resolve"):
                await client.get("http://no-such-host.invalid/mcp")
    assert server.seen == []
