"""The console's attestation key, chosen from configuration.

It lives in identity, the lowest layer that may read the audit signing key (`console.audit.signing`), so
every layer above that signs or publishes attestations (mcp, calls, dispatch, web) can use it.
"""

from __future__ import annotations

from console.attestation import Attester, derived_key, load_private_key
from console.audit.signing import signer_from
from console.config import Settings, secret_text
from console.errors import ConsoleError


def attester_from(settings: Settings) -> Attester | None:
    """The attester of CONSOLE_APPROVAL_SIGNING_KEY, else of the audit signing key, else of a key derived
    from CONSOLE_SECRET_KEY; None when none of them is set (attestations are then off).

    Raises:
        ConsoleError: a configured key is unreadable, in one line naming the setting.
    """
    if settings.approval_signing_key is not None:
        try:
            return Attester(load_private_key(settings.approval_signing_key.get_secret_value()))
        except ValueError as exc:
            raise ConsoleError(f"invalid settings: CONSOLE_APPROVAL_SIGNING_KEY: {exc}") from None
    try:
        signer = signer_from(settings)
    except OSError as exc:
        raise ConsoleError(
            f"invalid settings: CONSOLE_AUDIT_SIGNING_KEY_FILE: cannot read it ({exc.strerror or exc})"
        ) from None
    if signer is not None:
        return Attester(signer.key)
    secret = secret_text(settings)
    return None if secret is None else Attester(derived_key(secret))
