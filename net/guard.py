"""The SSRF guard of our outgoing HTTP (webhook deliveries, marketplace certificates): only public addresses are
dialled, and the address dialled is the one that was checked (the check sits in the connection itself, so a second
DNS answer cannot swap in a private one). Two clients: aiohttp's for webhook deliveries (`guarded_session`: a
quarter of httpx's CPU a request, bench/deliveries.py), httpx's for the rest (`guarded_client`)."""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import socket
import ssl
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

import aiohttp
import httpcore
import httpx
from aiohttp.abc import AbstractResolver, ResolveResult

from net.stream import dial
from wire.addresses import ALLOW_PRIVATE_SETTING, refusal

Resolve = Callable[[str, int], Awaitable[list[tuple[str, int]]]]
"""(host, port) -> the (address, port) pairs to dial, in the order to try them (the system's resolver keeps the port;
a test's maps a name to a local peer)."""


class TargetRefused(httpcore.ConnectError, OSError):
    """The host resolves to no address we may dial; nothing was dialled. An OSError too, as aiohttp's resolvers and
    socket factories raise."""


async def system_resolve(host: str, port: int) -> list[tuple[str, int]]:
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys((str(info[4][0]), port) for info in infos))


def allowed(host: str, found: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """The public ones of the addresses `host` resolved to; TargetRefused, naming each and why, when none is."""
    refused = {target: refusal(ipaddress.ip_address(target[0])) for target in found}
    kept = [target for target, reason in refused.items() if reason is None]
    if not kept:
        named = ", ".join(f"{address} ({reason})" for (address, _), reason in refused.items())
        raise TargetRefused(
            f"refused: {host} resolves only to non-public addresses: {named}; we dial public addresses only "
            f"unless {ALLOW_PRIVATE_SETTING} is set"
        )
    return kept


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend with the guard in `connect_tcp`: resolve, keep the allowed addresses, dial them.
    TLS (SNI and the certificate check) and the Host header still use the URL's host name, because httpcore starts TLS
    on the stream returned here with the origin's host name."""

    def __init__(self, *, allow_private: bool, resolve: Resolve = system_resolve) -> None:
        self.allow_private = allow_private
        self.resolve = resolve

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        targets = await self._targets(host, port, timeout)
        last: Exception | None = None
        for address, to_port in targets:
            try:
                return await dial(address, to_port, timeout)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as error:
                last = error
        assert last is not None
        raise last

    async def _targets(self, host: str, port: int, timeout_s: float | None) -> list[tuple[str, int]]:
        try:
            found = [(str(ipaddress.ip_address(host)), port)]
        except ValueError:
            try:
                async with asyncio.timeout(timeout_s):
                    found = await self.resolve(host, port)
            except TimeoutError as error:
                raise httpcore.ConnectTimeout(f"resolving {host} timed out") from error
            except OSError as error:
                raise httpcore.ConnectError(f"cannot resolve {host}: {error}") from error
        if not found:
            raise httpcore.ConnectError(f"cannot resolve {host}: no addresses")
        return found if self.allow_private else allowed(host, found)

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("the guarded client never uses unix sockets")

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class GuardedTransport(httpx.AsyncHTTPTransport):
    """httpx's transport over a connection pool whose connections are made by the GuardedBackend. No proxy (it would
    be dialled instead of the vetted address), no environment configuration."""

    def __init__(
        self,
        *,
        backend: GuardedBackend,
        verify: ssl.SSLContext,
        limits: httpx.Limits,
    ) -> None:
        super().__init__(verify=verify, trust_env=False, limits=limits)
        # httpx has no parameter for the network backend; the pool it built is replaced by the same pool with ours.
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=verify,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=backend,
        )


@functools.cache
def tls_context(ca_bundle: str | Path | None = None) -> ssl.SSLContext:
    """Certificate and host name verification against the system's CAs, or only those of `ca_bundle`: one context per
    bundle in a process, shared by every client that gives it (`verify=tls_context()`; its users do not change it).
    Loading the CAs takes 20-25 ms of CPU, which httpx pays again for each client made without one; a bundle changed
    on disk is read at the next start."""
    return ssl.create_default_context(cafile=str(ca_bundle) if ca_bundle is not None else None)


def guarded_client(
    *,
    allow_private_targets: bool,
    ca_bundle: str | Path | None = None,
    timeout_s: float = 10.0,
    max_connections: int = 8,
    resolve: Resolve = system_resolve,
    tls: ssl.SSLContext | None = None,
) -> httpx.AsyncClient:
    """An HTTP client for whatever a customer or a message names (webhook receivers, certificate URLs): guarded
    dialling, verified TLS (`tls`, or one made from `ca_bundle`),
    no redirects followed (a redirect could point anywhere), no proxies or netrc from the environment."""
    limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
    backend = GuardedBackend(allow_private=allow_private_targets, resolve=resolve)
    transport = GuardedTransport(backend=backend, verify=tls or tls_context(ca_bundle), limits=limits)
    return httpx.AsyncClient(
        transport=transport, timeout=httpx.Timeout(timeout_s), follow_redirects=False, trust_env=False
    )


class _GuardedResolver(AbstractResolver):
    """aiohttp's resolver through `resolve`, keeping the public addresses only (unless private ones are allowed)."""

    def __init__(self, *, allow_private: bool, resolve: Resolve) -> None:
        self.allow_private = allow_private
        self._resolve = resolve

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        found = await self._resolve(host, port)
        if not found:
            raise OSError(f"cannot resolve {host}: no addresses")
        kept = found if self.allow_private else allowed(host, found)
        return [
            {
                "hostname": host,
                "host": address,
                "port": to_port,
                "family": socket.AF_INET6 if ":" in address else socket.AF_INET,
                "proto": 0,
                "flags": socket.AI_NUMERICHOST,
            }
            for address, to_port in kept
        ]

    async def close(self) -> None:
        return None


def _guarded_socket(addr_info: tuple[Any, ...]) -> socket.socket:
    """The socket for an address aiohttp is about to dial, made only for a public one: the hard check, under the
    resolver's (which names the host in its refusal), and the only one for a URL that gives an address itself."""
    family, kind, proto, _, address = addr_info
    reason = refusal(ipaddress.ip_address(address[0]))
    if reason is not None:
        raise TargetRefused(
            f"refused: {address[0]} is not a public address ({reason}); we dial public addresses only unless "
            f"{ALLOW_PRIVATE_SETTING} is set"
        )
    return socket.socket(family, kind, proto)


KEEP_IDLE_S = 5.0
"""How long an idle connection to a receiver is kept (httpx's default too): no longer than common servers keep theirs
(Node's 5 s), so that a POST is not sent on a connection the receiver is closing, which aiohttp does not retry."""


def guarded_session(
    *,
    allow_private_targets: bool,
    tls: ssl.SSLContext,
    max_connections: int = 1,
    resolve: Resolve = system_resolve,
) -> aiohttp.ClientSession:
    """An aiohttp session for the webhook receivers customers name: guarded dialling (the resolver keeps the public
    addresses, and the socket is made only for one), verified TLS (`tls`; SNI, the certificate and the Host header on
    the URL's name), no proxies or netrc from the environment, at most `max_connections` kept. No timeout of its own
    and no redirects: each request gives `allow_redirects=False` and runs under its caller's timeout."""
    connector = aiohttp.TCPConnector(
        limit=max_connections,
        ssl=tls,
        resolver=_GuardedResolver(allow_private=allow_private_targets, resolve=resolve),
        use_dns_cache=False,
        socket_factory=None if allow_private_targets else _guarded_socket,
        keepalive_timeout=KEEP_IDLE_S,
    )
    return aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=None), trust_env=False)
