"""Names at the gateway's /mcp: a server name that could make them ambiguous is refused, and the names of
servers whose names pass never meet."""

from __future__ import annotations

import pytest

from console.mcp.names import MAX_LENGTH, gateway_name, server_name_problem


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("hostile__b", "no '__'"),
        ("trailing_", "no '_' at the end"),
        ("a.b", "only letters, digits, '-' and '_'"),
        ("s" * 41, "at most 40 characters"),
        ("console", "reserved"),
    ],
)
def test_a_server_name_that_could_make_names_at_mcp_ambiguous_says_why(name: str, problem: str) -> None:
    assert problem in (server_name_problem(name) or "")


@pytest.mark.parametrize("name", ["deployer", "my-server", "my_server", "v2", "s" * 40])
def test_plain_server_names_pass(name: str) -> None:
    assert server_name_problem(name) is None


def test_a_tool_whose_own_name_holds_the_separator_cannot_take_another_servers_name() -> None:
    """The issue's case: `hostile`'s tool `b__c` and `hostile__b`'s tool `c`; the second server's name
    is refused, and no other name that passes makes `hostile__b__c` anyone's but `hostile`'s."""
    assert gateway_name("hostile", "b__c") == "hostile__b__c"
    assert server_name_problem("hostile__b") is not None
    taken = {
        gateway_name(server, tool)
        for server in ("hostile", "hostile-b", "hostile_b")
        for tool in ("c", "b__c")
    }
    assert len(taken) == 6


def test_a_name_that_had_to_change_ends_in_a_digest_so_it_meets_no_name_left_as_it_was() -> None:
    dotted, underscored = gateway_name("srv", "get.user"), gateway_name("srv", "get_user")
    assert underscored == "srv__get_user"
    assert dotted.startswith("srv__get_user_") and dotted != underscored  # noqa: PT018
    long_a, long_b = gateway_name("srv", "a" * 80), gateway_name("srv", "a" * 81)
    assert len(long_a) == len(long_b) == MAX_LENGTH
    assert long_a != long_b
    assert long_a.startswith("srv__")  # the server's name is kept whole


def test_names_of_servers_that_pass_never_meet_though_their_tools_names_are_chosen_to() -> None:
    servers = ["a", "a-b", "a_b", "ab", "a" * 40]
    tools = ["b", "b__c", "_b", "b.c", "b_c", "x" * 70, "a" * 40 + "__b", ""]
    named = [(gateway_name(server, tool), server) for server in servers for tool in tools]
    owners: dict[str, set[str]] = {}
    for name, server in named:
        owners.setdefault(name, set()).add(server)
    assert all(len(found) == 1 for found in owners.values())
    assert all(len(name) <= MAX_LENGTH for name, _ in named)
