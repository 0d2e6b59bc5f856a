"""The SSRF guard of our outgoing HTTP (webhook deliveries, marketplace certificates): only public addresses are
dialled, and the address dialled is the one that was checked (the check sits in the connection itself, so a second
DNS answer cannot swap in a private one)."""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import socket
import ssl
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

import httpcore
import httpx

from net.stream import dial
from wire.addresses import ALLOW_PRIVATE_SETTING, refusal

Resolve = Callable[[str, int], Awaitable[list[tuple[str, int]]]]
"""(host, port) -> the (address, port) pairs to dial, in the order to try them (the system's resolver keeps the port;
a test's maps a name to a local peer)."""


class TargetRefused(httpcore.ConnectError):
    """The host resolves to no address we may dial; nothing was dialled."""


async def system_resolve(host: str, port: int) -> list[tuple[str, int]]:
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys((str(info[4][0]), port) for info in infos))


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
        if self.allow_private:
            return found
        refused = {target: refusal(ipaddress.ip_address(target[0])) for target in found}
        allowed = [target for target, reason in refused.items() if reason is None]
        if not allowed:
            named = ", ".join(f"{address} ({reason})" for (address, _), reason in refused.items())
            raise TargetRefused(
                f"refused: {host} resolves only to non-public addresses: {named}; we dial public addresses only "
                f"unless {ALLOW_PRIVATE_SETTING} is set"
            )
        return allowed

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
