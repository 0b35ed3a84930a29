"""Every request the server makes on a user's behalf (a cited page, a webhook) goes through here.

The address rule: a URL is refused unless

* its scheme is http or https and it carries no credentials,
* its port is the scheme's default (80, 443) or one ``OUTBOUND_ALLOWED_PORTS`` names, and
* every address its host resolves to is a global one: loopback, private, link-local
  (the cloud metadata address 169.254.169.254), multicast, unspecified, reserved, shared
  (100.64/10) and IPv4 addresses mapped or embedded into IPv6 are refused, unless
  ``OUTBOUND_ALLOWED_NETWORKS`` (CIDRs, empty by default) names the network on purpose.

The connection goes to the address that was checked (``_PinnedHTTPConnection``), never to a
second lookup of the name, so a name that resolves to a public address when checked and to
127.0.0.1 a moment later (DNS rebinding) reaches nothing internal. Redirects are followed here,
hop by hop, each hop checked like the first; no proxy from the environment is used.

``url_check`` is the same rule for a URL being saved (a webhook), so a refused address is
refused when it is entered, not only when it is used. Judge endpoints are not fetched through
here: they are the deployment's own allow-list (``scoring.judges.endpoints``), set by an
administrator, and may well be a model server on the same machine.
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import ssl
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

from django.conf import settings

DEFAULT_PORTS = {"http": 80, "https": 443}
REDIRECT_STATUS = frozenset({301, 302, 303, 307, 308})
MAX_REDIRECTS = 5


class AddressRefused(ValueError):
    """The URL names a scheme, port or address the server does not send requests to."""


@dataclass
class OutboundResponse:
    url: str  # the last hop's URL
    status: int
    headers: http.client.HTTPMessage
    body: bytes
    hops: list[str] = field(default_factory=list)  # every URL requested, in order

    @property
    def content_type(self) -> str:
        return self.headers.get("Content-Type", "") or ""

    @property
    def charset(self) -> str:
        return self.headers.get_content_charset() or "utf-8"


def _allowed_networks() -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    return [ipaddress.ip_network(str(net), strict=False) for net in getattr(settings, "OUTBOUND_ALLOWED_NETWORKS", ())]


def _allowed_ports() -> set[int]:
    return {int(port) for port in getattr(settings, "OUTBOUND_ALLOWED_PORTS", ())}


def address_refusal(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    """Why the server may not connect to ``address`` ("" when it may)."""
    if any(address in net for net in _allowed_networks()):
        return ""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or address.sixtofour or (address.teredo[1] if address.teredo else None)
        if embedded is not None:
            inner = address_refusal(embedded)
            return f"{inner} (inside the IPv6 address {address})" if inner else ""
    for kind, flag in (("a loopback", address.is_loopback), ("an unspecified", address.is_unspecified),
                       ("a link-local", address.is_link_local), ("a multicast", address.is_multicast),
                       ("a private", address.is_private), ("a reserved", address.is_reserved)):
        if flag:
            return f"{address} is {kind} address"
    if not address.is_global:
        return f"{address} is not a public address"
    return ""


def _target(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of an http(s) URL without credentials; ``AddressRefused`` otherwise."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise AddressRefused(f"{url[:200]!r} is not a valid URL ({exc})") from None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname:
        raise AddressRefused(f"{url[:200]!r} is not an http(s) URL")
    if parts.username is not None or parts.password is not None:
        raise AddressRefused("the URL carries credentials; none are sent to outside servers")
    return scheme, parts.hostname, DEFAULT_PORTS[scheme] if port is None else port


def _resolve(host: str, port: int) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass  # a name: resolved next
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError, OSError) as exc:
        raise AddressRefused(f"{host} does not resolve ({exc})") from None
    addresses = []
    for info in infos:
        address = ipaddress.ip_address(info[4][0].split("%", 1)[0])
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise AddressRefused(f"{host} does not resolve")
    return addresses


def url_check(url: str) -> tuple[str, str, int, ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """(scheme, host, port, the address to connect to) of an allowed URL; ``AddressRefused`` says why
    not. Every address the host resolves to must be allowed, so no answer of a round-robin name
    can be an internal one."""
    scheme, host, port = _target(url)
    addresses = _resolve(host, port)
    for address in addresses:
        reason = address_refusal(address)
        if reason:
            shown = reason if host == str(address) else f"{host} resolves to {address}, which is {reason.split(' is ', 1)[1]}"
            raise AddressRefused(f"{shown}; the server sends no requests to internal addresses")
    if port != DEFAULT_PORTS[scheme] and port not in _allowed_ports():
        raise AddressRefused(f"port {port} is not {scheme}'s default ({DEFAULT_PORTS[scheme]}) and "
                             "OUTBOUND_ALLOWED_PORTS does not allow it")
    return scheme, host, port, addresses[0]


class _PinnedHTTPConnection(http.client.HTTPConnection):
    """An HTTP connection to ``address`` (already checked) that names ``host`` in its Host header."""

    def __init__(self, host: str, port: int, address: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self._address = address

    def connect(self) -> None:
        self.sock = socket.create_connection((self._address, self.port), self.timeout)


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """As ``_PinnedHTTPConnection`` over TLS: the certificate is checked against ``host``."""

    def __init__(self, host: str, port: int, address: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout, context=ssl.create_default_context())
        self._address = address

    def connect(self) -> None:
        sock = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)


def outbound_request(url: str, *, method: str = "GET", body: bytes | None = None, headers: dict | None = None,
                     timeout: float = 15.0, max_bytes: int = 2 * 1024 * 1024,
                     follow_redirects: bool = True) -> OutboundResponse:
    """One request under the address rule, reading at most ``max_bytes`` of the answer.

    Redirects (GET only) are followed up to ``MAX_REDIRECTS`` hops, each checked again; with
    ``follow_redirects=False`` a 3xx answer is returned as it is. ``AddressRefused`` when a hop
    is refused (nothing was sent to it), ``OSError`` for network failures."""
    hops: list[str] = []
    while True:
        scheme, host, port, address = url_check(url)
        hops.append(url)
        parts = urlsplit(url)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        connection_class = _PinnedHTTPSConnection if scheme == "https" else _PinnedHTTPConnection
        connection = connection_class(host, port, str(address), timeout)
        try:
            connection.request(method, path, body=body, headers=dict(headers or {}))
            response = connection.getresponse()
            location = response.getheader("Location")
            if follow_redirects and method == "GET" and response.status in REDIRECT_STATUS and location:
                if len(hops) > MAX_REDIRECTS:
                    raise AddressRefused(f"more than {MAX_REDIRECTS} redirects")
                url = urljoin(url, location)
                continue
            return OutboundResponse(url=url, status=response.status, headers=response.headers,
                                    body=response.read(max_bytes), hops=hops)
        finally:
            connection.close()


def outbound_url_validator(value: str) -> None:
    """A model/form validator: the address rule for a URL being saved (a webhook receiver)."""
    from django.core.exceptions import ValidationError

    try:
        url_check(value)
    except AddressRefused as exc:
        raise ValidationError(str(exc), code="address_refused") from None
