"""URL-mode links in the audit log: their origin and path and the SHA-256 of the whole link, never the rest.

A link's query and fragment often carry one-time states and tokens, and the link belongs to the person
whose agent made the call; auditors and admins read the log. Events are recorded this way; events that
older versions recorded with the whole link are shown and exported the same way (`redact_payload`).
"""

from __future__ import annotations

import hashlib
from typing import Any
from urllib.parse import urlsplit

SHA_KEY = "url_sha256"


def redacted_url(url: str) -> dict[str, str]:
    """`url` as the log keeps it: origin and path (no user info, query or fragment), and its SHA-256."""
    digest = hashlib.sha256(url.encode("utf-8", "surrogatepass")).hexdigest()
    try:
        parts = urlsplit(url)
        host, port = parts.hostname or "", parts.port
    except ValueError:
        return {"url": "", SHA_KEY: digest}  # not a URL the console would open: keep nothing of it
    host = f"[{host}]" if ":" in host else host
    origin = f"{parts.scheme}://{host}" + (f":{port}" if port is not None else "")
    return {"url": origin + parts.path, SHA_KEY: digest}


def redact_input_requests(requests: dict[str, Any]) -> dict[str, Any]:
    """A copy of a round's inputRequests, as recorded, with every URL-mode link redacted."""
    return {key: _redacted(request, recording=True) for key, request in requests.items()}


def redact_payload(action: str, payload: dict[str, Any]) -> dict[str, Any] | None:
    """An event's payload with whole links redacted, or None when it holds none (as every new event)."""
    requests = payload.get("input_requests")
    if action != "round_received" or not isinstance(requests, dict):
        return None
    redacted = {key: _redacted(request, recording=False) for key, request in requests.items()}
    return None if redacted == requests else {**payload, "input_requests": redacted}


def _redacted(request: Any, *, recording: bool) -> Any:
    params = request.get("params") if isinstance(request, dict) else None
    if not isinstance(params, dict) or params.get("mode") != "url":
        return request
    url = params.get("url")
    shown = redacted_url(url if isinstance(url, str) else "")
    if not recording and shown["url"] == url:
        return request  # nothing past the path: recorded redacted, or a link that had nothing to hide
    return {**request, "params": {**params, **shown}}
