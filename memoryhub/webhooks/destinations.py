"""Where a webhook may be sent: public http(s) addresses only, checked on creation and per send.

An endpoint's URL comes from a workspace's agent key or staff, so the server must not become a
way into its own network (SSRF): a host that resolves to a loopback, private, link-local,
multicast, reserved or unspecified address is refused (IPv4, IPv6 and IPv4-mapped IPv6).
DNS can change after creation, so every send resolves the host again, checks every address,
and connects to the address it checked (no second lookup to rebind). Redirects are never
followed. `MEMORYHUB_WEBHOOK_ALLOW_PRIVATE_URLS` lifts the address check (a receiver on the
same host or network); plain http needs `MEMORYHUB_WEBHOOK_ALLOW_HTTP` (on in DEBUG).
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import ssl
from urllib.parse import urlsplit

from django.conf import settings
from django.utils.translation import gettext_noop

from memoryhub.errors import InvalidInputError

MAX_URL = 500
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


NO_ADDRESS = gettext_noop("url host {host!r} does not resolve")


class UnsafeDestinationError(InvalidInputError):
    """The URL's host is (or now resolves to) an address the server must not reach."""

    code = "unsafe_webhook_url"


def check_url(url: str) -> str:
    """The URL, stripped, if it is an allowed http(s) URL whose host resolves to public addresses."""
    url = url.strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or len(url) > MAX_URL:
        raise InvalidInputError(
            gettext_noop("url must be an http(s) URL of at most {limit} characters"), limit=MAX_URL
        )
    if parts.scheme == "http" and not settings.MEMORYHUB_WEBHOOK_ALLOW_HTTP:
        raise InvalidInputError(gettext_noop("url must use https"))
    try:
        port = parts.port
    except ValueError:
        raise InvalidInputError(gettext_noop("url has an invalid port")) from None
    if parts.username or parts.password:
        raise InvalidInputError(gettext_noop("url must not carry a user name or password"))
    public_address(parts.hostname, port or _default_port(parts.scheme))
    return url


def public_address(host: str, port: int) -> str | None:
    """The address to connect to: the first the host resolves to, once all are checked public.

    None when private addresses are allowed (connect by name). Raises UnsafeDestinationError.
    """
    if settings.MEMORYHUB_WEBHOOK_ALLOW_PRIVATE_URLS:
        return None
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise UnsafeDestinationError(NO_ADDRESS, host=host) from None
    addresses = [ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]) for info in infos]
    if not addresses:
        raise UnsafeDestinationError(NO_ADDRESS, host=host)
    for address in addresses:
        if not is_public(address):
            raise UnsafeDestinationError(
                gettext_noop(
                    "url host {host!r} resolves to a non-public address ({address}); "
                    "webhooks are sent to public addresses only"
                ),
                host=host,
                address=address,
            )
    return str(addresses[0])


def is_public(address: IPAddress) -> bool:
    """Whether the server may connect to the address (an IPv4-mapped IPv6 is its IPv4)."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_global and not (
        address.is_loopback
        or address.is_private
        or address.is_link_local
        or address.is_multicast
        or address.is_reserved
        or address.is_unspecified
    )


def _default_port(scheme: str) -> int:
    return 443 if scheme == "https" else 80


def post(url: str, *, body: bytes, headers: dict[str, str], timeout: float) -> int:
    """POST to a checked URL, connecting to the address checked now; the status (no redirects).

    Raises UnsafeDestinationError (the host now resolves to a non-public address) or OSError.
    """
    url = check_url(url)
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or _default_port(parts.scheme)
    address = public_address(host, port)
    connection: http.client.HTTPConnection
    if parts.scheme == "https":
        connection = _PinnedHTTPSConnection(host, port, address=address, timeout=timeout)
    else:
        connection = _PinnedHTTPConnection(host, port, address=address, timeout=timeout)
    path = parts.path or "/"
    if parts.query:
        path = f"{path}?{parts.query}"
    try:
        connection.request("POST", path, body=body, headers=headers)
        response = connection.getresponse()
        response.read()
        return int(response.status)
    finally:
        connection.close()


class _PinnedHTTPConnection(http.client.HTTPConnection):
    """Connects to the checked address (or the host when none), so DNS cannot change between."""

    def __init__(self, host: str, port: int, *, address: str | None, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self.address = address

    def connect(self) -> None:
        self.sock = socket.create_connection((self.address or self.host, self.port), self.timeout)


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """As above, over TLS verified against the URL's host name."""

    def __init__(self, host: str, port: int, *, address: str | None, timeout: float) -> None:
        self.tls = ssl.create_default_context()
        super().__init__(host, port, timeout=timeout, context=self.tls)
        self.address = address

    def connect(self) -> None:
        raw = socket.create_connection((self.address or self.host, self.port), self.timeout)
        self.sock = self.tls.wrap_socket(raw, server_hostname=self.host)
