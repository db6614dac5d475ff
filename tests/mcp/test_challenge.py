"""Reading what an MCP server's 401 or 403 says it wants (WWW-Authenticate, RFC 6750 and RFC 9728)."""

from __future__ import annotations

from console.mcp.challenge import MAX_VALUE_CHARS, Challenge, bearer_params, challenge_of


def test_a_bearer_challenge_gives_resource_metadata_scope_and_error() -> None:
    header = (
        'Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", '
        'scope="files:read files:write", error="insufficient_scope", error_description="needs \\"write\\""'
    )
    assert challenge_of(403, header) == Challenge(
        status=403,
        resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp",
        scope="files:read files:write",
        error="insufficient_scope",
    )
    assert bearer_params(header)["error_description"] == 'needs "write"'


def test_only_the_bearer_challenge_of_several_counts() -> None:
    header = 'Basic realm="files", Bearer scope=files:read, error=invalid_token, DPoP algs="ES256"'
    assert bearer_params(header) == {"scope": "files:read", "error": "invalid_token"}
    assert bearer_params('Basic realm="x", scope="not-bearer"') == {}


def test_a_dpop_challenge_counts_like_a_bearer_one() -> None:
    header = (
        'DPoP algs="ES256", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource"'
    )
    assert challenge_of(401, header) == Challenge(
        status=401, resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource"
    )


def test_a_401_without_parameters_is_still_a_challenge() -> None:
    assert challenge_of(401, None) == Challenge(status=401)
    assert challenge_of(401, "Bearer") == Challenge(status=401)


def test_a_403_that_is_not_about_scopes_and_other_statuses_are_not_challenges() -> None:
    assert challenge_of(403, 'Bearer error="invalid_token"') is None
    assert challenge_of(403, None) is None
    assert challenge_of(500, 'Bearer scope="x"') is None


def test_hostile_headers_are_bounded_and_never_crash() -> None:
    huge = "x" * (MAX_VALUE_CHARS + 1)
    assert bearer_params(f'Bearer scope="{huge}", error=invalid_token') == {"error": "invalid_token"}
    for header in ('Bearer scope="unterminated', "Bearer ,,,=", "=", '"', "Bearer scope=a=b", "\x00Bearer"):
        bearer_params(header)
    assert bearer_params("Bearer scope=a, scope=b") == {"scope": "a"}
