"""The SSRF guard's classification: which addresses a webhook delivery may be dialled to, and why not."""

from __future__ import annotations

import ipaddress

import pytest

from wire.addresses import refusal


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "loopback"),
        ("127.255.0.9", "loopback"),
        ("10.0.0.1", "private"),
        ("10.255.255.255", "private"),
        ("172.16.0.1", "private"),
        ("172.31.255.254", "private"),
        ("192.168.1.1", "private"),
        ("169.254.169.254", "link-local"),  # cloud metadata services
        ("100.64.0.1", "shared address space"),  # carrier-grade NAT
        ("100.127.255.254", "shared address space"),
        ("0.0.0.0", "unspecified"),
        ("224.0.0.1", "multicast"),
        ("239.255.255.250", "multicast"),
        ("240.0.0.1", "private"),  # reserved for future use; Python lists it among the private networks
        ("255.255.255.255", "private"),
        ("192.0.2.10", "private"),  # documentation
        ("::1", "loopback"),
        ("::", "unspecified"),
        ("fe80::1", "link-local"),
        ("febf::1", "link-local"),
        ("fc00::1", "private"),  # unique local
        ("fd12:3456:789a::1", "private"),
        ("fec0::1", "site-local"),
        ("ff02::1", "multicast"),
        ("::ffff:127.0.0.1", "loopback, IPv4 inside IPv6"),
        ("::ffff:10.1.2.3", "private, IPv4 inside IPv6"),
        ("::ffff:169.254.169.254", "link-local, IPv4 inside IPv6"),
        ("64:ff9b::a00:1", "private, IPv4 inside IPv6"),  # NAT64 of 10.0.0.1
        ("2001:db8::1", "private"),  # documentation
    ],
)
def test_non_public_addresses_are_refused(address: str, reason: str) -> None:
    assert refusal(ipaddress.ip_address(address)) == reason


@pytest.mark.parametrize(
    "address",
    [
        "93.184.216.34",
        "8.8.8.8",
        "1.1.1.1",
        "172.15.255.255",  # just below 172.16/12
        "172.32.0.1",  # just above it
        "100.63.255.255",  # just below 100.64/10
        "100.128.0.1",
        "2606:4700:4700::1111",
        "2a00:1450:4001:82b::200e",
        "::ffff:8.8.8.8",
        "64:ff9b::808:808",  # NAT64 of 8.8.8.8
    ],
)
def test_public_addresses_are_allowed(address: str) -> None:
    assert refusal(ipaddress.ip_address(address)) is None
