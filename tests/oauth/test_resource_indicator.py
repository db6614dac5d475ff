"""The rule that decides whether the console's OAuth requests carry `resource` (RFC 8707), and how scopes
are qualified without it, for Microsoft Entra ID's hosts that cannot be served locally."""

from __future__ import annotations

import pytest

from console.oauth.resource_indicator import ResourceIndicator, qualified_scope

TENANT = "0b1c2d3e-0000-4000-8000-000000000000"
ENTRA = f"https://login.microsoftonline.com/{TENANT}/v2.0"


@pytest.mark.parametrize(
    ("issuer", "authorize", "omitted"),
    [
        (ENTRA, f"https://login.microsoftonline.com/{TENANT}/oauth2/v2.0/authorize", True),
        (f"https://LOGIN.microsoftonline.us/{TENANT}/v2.0", "https://as.example/authorize", True),
        (
            "https://as.example",
            f"https://login.partner.microsoftonline.cn/{TENANT}/oauth2/v2.0/authorize",
            True,
        ),
        # Entra's v1.0 endpoints want `resource`.
        (
            f"https://sts.windows.net/{TENANT}/",
            f"https://login.microsoftonline.com/{TENANT}/oauth2/authorize",
            False,
        ),
        ("https://login.microsoftonline.com.attacker.example/t/v2.0", "https://as.example/authorize", False),
        ("https://auth.example.com", "https://auth.example.com/authorize", False),
    ],
)
def test_the_rule_omits_resource_for_entra_v2_endpoints_only(
    issuer: str, authorize: str, omitted: bool
) -> None:
    assert ResourceIndicator().omits(issuer, authorize) is omitted


def test_the_servers_setting_overrides_the_rule() -> None:
    entra_authorize = f"https://login.microsoftonline.com/{TENANT}/oauth2/v2.0/authorize"
    assert ResourceIndicator("send").omits(ENTRA, entra_authorize) is False
    assert ResourceIndicator("omit").omits("https://auth.example.com", "https://auth.example.com/a") is True


@pytest.mark.parametrize(
    ("asked", "qualified"),
    [
        ("notes.read", "api://app/notes.read offline_access"),
        (None, "api://app/.default offline_access"),
        ("openid offline_access", "api://app/.default openid offline_access"),
        (
            "https://graph.microsoft.com/User.Read notes.read notes.read",
            "https://graph.microsoft.com/User.Read api://app/notes.read offline_access",
        ),
    ],
)
def test_scopes_are_qualified_by_the_application_id_uri(asked: str | None, qualified: str) -> None:
    assert qualified_scope(asked, "api://app/") == qualified
