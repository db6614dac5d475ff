"""Email over SMTP (aiosmtplib): `CONSOLE_SMTP_URL` says where — smtps:// is TLS from the start, smtp://
upgrades with STARTTLS when the server offers it, and insists on it before sending a password to a server
that is not on this machine."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from email.message import EmailMessage
from urllib.parse import unquote, urlsplit

from console.config import Settings
from console.notify.failed import DeliveryFailed
from console.notify.render import Message

TIMEOUT_SECONDS = 20.0


class MailFailed(DeliveryFailed):
    """The SMTP server could not be reached or refused the message."""


@dataclass(frozen=True)
class Mailer:
    host: str
    port: int
    tls: bool
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    sender: str = ""

    @classmethod
    def of(cls, settings: Settings) -> Mailer | None:
        if settings.smtp_url is None or settings.mail_from is None:
            return None
        parts = urlsplit(settings.smtp_url.get_secret_value())
        tls = parts.scheme == "smtps"
        return cls(
            host=parts.hostname or "",
            port=parts.port or (465 if tls else 587),
            tls=tls,
            username=unquote(parts.username) if parts.username else None,
            password=unquote(parts.password) if parts.password else None,
            sender=settings.mail_from,
        )

    async def send(self, recipient: str, message: Message) -> None:
        """Raises:
        MailFailed: not delivered to the SMTP server.
        """
        import aiosmtplib  # here: a console that sends no mail is spared loading it

        mail = EmailMessage()
        mail["From"], mail["To"], mail["Subject"] = self.sender, recipient, message.subject
        mail.set_content(message.text)
        mail.add_alternative(message.html, subtype="html")
        try:
            await aiosmtplib.send(
                mail,
                hostname=self.host,
                port=self.port,
                username=self.username,
                password=self.password,
                use_tls=self.tls,
                start_tls=None if self.tls or self._local() or not self.username else True,
                timeout=TIMEOUT_SECONDS,
            )
        except (aiosmtplib.SMTPException, OSError, TimeoutError) as exc:
            raise MailFailed(f"{type(exc).__name__}: {str(exc)[:300]}") from None

    def _local(self) -> bool:
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False
