"""The address policy: which addresses outgoing requests (webhook deliveries) may go to, and the check of a target
URL given by a user. Only public unicast addresses qualify; private, loopback, link-local, shared, multicast and
reserved ones never do, unless an operator allows private targets (development and tests)."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from urllib.parse import urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

ALLOW_PRIVATE_SETTING = "SIGNALYARD_WEBHOOK_ALLOW_PRIVATE_TARGETS"
_SHARED_ADDRESS_SPACE = ipaddress.ip_network("100.64.0.0/10")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def refusal(address: IPAddress) -> str | None:
    """Why a request must not go to `address` (a word for a log), or None for a public unicast address. IPv6 forms
    that carry an IPv4 address (mapped, NAT64) are judged by that address."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or (
            ipaddress.IPv4Address(int(address) & 0xFFFFFFFF) if address in _NAT64 else None
        )
        if embedded is not None:
            reason = refusal(embedded)
            return f"{reason}, IPv4 inside IPv6" if reason else None
        if address.is_site_local:
            return "site-local"
    checks = (
        ("unspecified", address.is_unspecified),
        ("loopback", address.is_loopback),
        ("link-local", address.is_link_local),
        ("multicast", address.is_multicast),
        ("shared address space", isinstance(address, ipaddress.IPv4Address) and address in _SHARED_ADDRESS_SPACE),
        ("private", address.is_private),
        ("reserved", address.is_reserved),
    )
    for reason, applies in checks:
        if applies:
            return reason
    return None if address.is_global else "not globally routable"


class TargetUrlRefused(ValueError):
    """A target URL a user gave cannot be used; the message says why, in words for that user."""


def check_target_url(url: str, *, schemes: Sequence[str], allow_private: bool) -> str:
    """`url` if it may be a target: one of `schemes`, a host, no credentials, a valid port, and not a literal address
    the policy refuses. A host name passes here: it is resolved, and the address dialled checked, at every request
    (the SSRF guard), since what a name resolves to can change after it was accepted."""
    parts = urlsplit(url)
    if parts.scheme.lower() not in schemes:
        raise TargetUrlRefused(f"url must be an {' or '.join(scheme.upper() for scheme in schemes)} URL")
    if not parts.hostname:
        raise TargetUrlRefused("url must name a host")
    if parts.username is not None or parts.password is not None:
        raise TargetUrlRefused("url must not carry credentials")
    try:
        _ = parts.port
    except ValueError:
        raise TargetUrlRefused("url has an invalid port") from None
    try:
        address = ipaddress.ip_address(parts.hostname)
    except ValueError:
        return url  # a host name
    if not allow_private and refusal(address) is not None:
        raise TargetUrlRefused("url must not point at a private, loopback or reserved address")
    return url
