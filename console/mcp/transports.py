"""Another way to reach some endpoints than their own transport (a stdio process, HTTP).

A process may be handed `Transports` to reach some servers itself, for example one that runs in the same
event loop over the SDK's in-memory streams, as the console's tests run most of theirs. Every other
endpoint, which is every endpoint in a console that was handed none, uses its own transport.
"""

from __future__ import annotations

from typing import Protocol

from mcp.client import Transport

from console.mcp.endpoint import Endpoint


class Transports(Protocol):
    """Opens the transport of the endpoints it reaches itself."""

    def __call__(self, endpoint: Endpoint) -> Transport | None:
        """The transport to the endpoint's server (entered once per connection, left when it closes), or
        None when the endpoint is to be reached by its own."""
