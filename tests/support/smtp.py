"""A real SMTP server on loopback (aiosmtpd) that keeps what it receives: the invitation tests
send through Django's SMTP backend to it, not to the locmem backend.

Addresses in ``refuse`` are answered ``550`` at RCPT, as a mail server refuses an unknown
mailbox, so a test sees one refusal among deliveries that go through."""

import socket
from email import message_from_bytes, policy

from aiosmtpd.controller import Controller


class _Handler:
    def __init__(self, refuse: set[str]):
        self.refuse = refuse
        self.messages = []

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if address.lower() in self.refuse:
            return "550 5.1.1 no such mailbox here"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        self.messages.append(message_from_bytes(envelope.content, policy=policy.default))
        return "250 Message accepted for delivery"


class LoopbackSmtp:
    def __init__(self, refuse=()):
        self.handler = _Handler({address.lower() for address in refuse})
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.controller = Controller(self.handler, hostname="127.0.0.1", port=self.port)

    @property
    def messages(self):
        return self.handler.messages

    def start(self) -> "LoopbackSmtp":
        self.controller.start()
        return self

    def stop(self) -> None:
        self.controller.stop()

    def settings(self) -> dict:
        """``override_settings`` arguments that send through this server."""
        return {"EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend", "EMAIL_HOST": "127.0.0.1",
                "EMAIL_PORT": self.port, "EMAIL_USE_TLS": False, "EMAIL_USE_SSL": False, "EMAIL_HOST_USER": "",
                "EMAIL_HOST_PASSWORD": "", "EMAIL_TIMEOUT": 10}
