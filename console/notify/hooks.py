"""Posting to a team's chat or webhook channel: JSON over HTTPS, to public addresses only unless the
channel is internal (or the settings allow private addresses), bounded in time and in the answer read.
A callback to an agent goes to the URL it gave with its call. A webhook or callback is signed per the
Standard Webhooks specification (`webhook-id` is the delivery's id, the same on every retry;
`webhook-timestamp`; `webhook-signature`, HMAC-SHA256 with the channel's secret, or for a callback the
webhook secret of the token that started the call)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlsplit

import httpx2
from standardwebhooks import Webhook

from console.identity.credentials import CredentialCipher, SecretMissing
from console.identity.tokens import webhook_secret_binding
from console.mcp.addresses import public_only_transport
from console.notify.channels import secret_binding, url_binding
from console.notify.failed import DeliveryFailed
from console.notify.models import Channel, Delivery
from console.oauth.http import CappedTransport

TIMEOUT_SECONDS = 10.0
MAX_ANSWER_BYTES = 64 * 1024


class ChannelClients:
    """The HTTP clients posts go out on, each made once and kept: a client's SSL context costs the event
    loop some 20 ms, which answering and resuming would feel if every post made its own."""

    def __init__(self) -> None:
        self._clients: dict[bool, httpx2.AsyncClient] = {}

    def client(self, *, private_ok: bool) -> httpx2.AsyncClient:
        if private_ok not in self._clients:
            inner = httpx2.AsyncHTTPTransport(trust_env=False) if private_ok else public_only_transport()
            self._clients[private_ok] = httpx2.AsyncClient(
                transport=CappedTransport(inner, MAX_ANSWER_BYTES),
                timeout=TIMEOUT_SECONDS,
                follow_redirects=False,
            )
        return self._clients[private_ok]

    async def aclose(self) -> None:
        for client in self._clients.values():
            await client.aclose()
        self._clients.clear()


@dataclass(frozen=True)
class CallbackTarget:
    """What a callback to an agent is signed with: the webhook secret of the token that started the call."""

    token_id: str
    sealed_secret: str | None
    live: bool  # the token is not revoked


async def post(
    target: Channel | CallbackTarget | None,
    delivery: Delivery,
    *,
    cipher: CredentialCipher,
    allow_private: bool,
    clients: ChannelClients,
    now: datetime,
) -> None:
    """POST a delivery to its channel, or for a callback to the URL the agent gave (`delivery.recipient`),
    signed with its token's webhook secret.

    Raises:
        DeliveryFailed: not accepted (a 2xx answer) this time; final when the channel is gone, or the
        token that started the call was revoked or has no secret.
    """
    if delivery.channel == "callback":
        callback = target if isinstance(target, CallbackTarget) else None
        if callback is None or not callback.live:
            raise DeliveryFailed("the token that started the call was revoked", final=True)
        if callback.sealed_secret is None:
            raise DeliveryFailed("the token that started the call has no webhook secret", final=True)
        signing = _open(cipher, callback.sealed_secret, webhook_secret_binding(callback.token_id))
        url = delivery.recipient
        http = clients.client(private_ok=allow_private)
        await _post(url, urlsplit(url).netloc, delivery, signing, http, now)
        return
    channel = target if isinstance(target, Channel) else None
    if channel is None:
        raise DeliveryFailed("the channel was removed", final=True)
    url = _open(cipher, channel.sealed_url, url_binding(channel.id))
    sealed = channel.sealed_secret
    secret = _open(cipher, sealed, secret_binding(channel.id)) if sealed else None
    http = clients.client(private_ok=channel.internal or allow_private)
    await _post(url, channel.host, delivery, secret, http, now)


def _open(cipher: CredentialCipher, sealed: str, binding: str) -> str:
    try:
        return cipher.open_bound(sealed, binding)
    except SecretMissing:
        raise DeliveryFailed(
            "a sealed URL or secret cannot be opened (the console secret changed)", final=True
        ) from None


async def _post(
    url: str, host: str, delivery: Delivery, secret: str | None, http: httpx2.AsyncClient, now: datetime
) -> None:
    body = json.dumps(json.loads(delivery.content_json)["body"])
    headers = {"Content-Type": "application/json", "User-Agent": "approval-console"}
    if secret is not None:
        headers |= {
            "webhook-id": delivery.id,
            "webhook-timestamp": str(int(now.timestamp())),
            "webhook-signature": Webhook(secret).sign(delivery.id, now, body),
        }
    try:
        response = await http.post(url, content=body.encode(), headers=headers)
    except httpx2.HTTPError as exc:
        said = str(exc).replace(url, host)[:200]  # a chat webhook's URL is itself a secret
        raise DeliveryFailed(f"{host}: {type(exc).__name__}: {said}") from None
    if not 200 <= response.status_code < 300:
        raise DeliveryFailed(f"{host} answered HTTP {response.status_code}")
