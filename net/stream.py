"""httpcore network streams on asyncio's own transports: TLS by the event loop (uvloop's is native code) instead of
anyio's TLS stream in Python, which cost about a quarter more CPU per delivery (measured: bench/deliveries.py)."""

from __future__ import annotations

import asyncio
import socket
import ssl
from typing import Any

import httpcore


class _Protocol(asyncio.Protocol):
    """Buffers what the transport receives; wakes the one reader or writer a connection has at a time."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.eof = False
        self.error: BaseException | None = None
        self.paused = False
        self.readable: asyncio.Future[None] | None = None
        self.writable: asyncio.Future[None] | None = None

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        _wake(self.readable)

    def eof_received(self) -> bool:
        self.eof = True
        _wake(self.readable)
        return False

    def connection_lost(self, exc: BaseException | None) -> None:
        self.eof = True
        self.error = exc
        _wake(self.readable)
        _wake(self.writable)

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False
        _wake(self.writable)


def _wake(waiter: asyncio.Future[None] | None) -> None:
    if waiter is not None and not waiter.done():
        waiter.set_result(None)


class AsyncioStream(httpcore.AsyncNetworkStream):
    def __init__(self, transport: asyncio.Transport, protocol: _Protocol) -> None:
        self._transport = transport
        self._protocol = protocol

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:  # noqa: ASYNC109 (httpcore's)
        protocol = self._protocol
        while not protocol.buffer and not protocol.eof:
            protocol.readable = asyncio.get_running_loop().create_future()
            try:
                async with asyncio.timeout(timeout):
                    await protocol.readable
            except TimeoutError as error:
                raise httpcore.ReadTimeout("the receiver sent nothing in time") from error
            finally:
                protocol.readable = None
        if protocol.buffer:
            data = bytes(protocol.buffer[:max_bytes])
            del protocol.buffer[:max_bytes]
            return data
        if protocol.error is not None:
            raise httpcore.ReadError(str(protocol.error) or type(protocol.error).__name__)
        return b""

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:  # noqa: ASYNC109 (httpcore's)
        protocol = self._protocol
        if protocol.eof or self._transport.is_closing():
            raise httpcore.WriteError("the connection is closed")
        self._transport.write(buffer)
        while protocol.paused and not protocol.eof:
            protocol.writable = asyncio.get_running_loop().create_future()
            try:
                async with asyncio.timeout(timeout):
                    await protocol.writable
            except TimeoutError as error:
                raise httpcore.WriteTimeout("the receiver took nothing in time") from error
            finally:
                protocol.writable = None

    async def aclose(self) -> None:
        self._transport.close()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
    ) -> AsyncioStream:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):
                transport = await loop.start_tls(
                    self._transport, self._protocol, ssl_context, server_hostname=server_hostname
                )
        except TimeoutError as error:
            self._transport.close()
            raise httpcore.ConnectTimeout("the TLS handshake did not finish in time") from error
        except (OSError, ssl.SSLError) as error:
            self._transport.close()
            raise httpcore.ConnectError(str(error)) from error
        assert transport is not None
        return AsyncioStream(transport, self._protocol)

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":
            # httpcore asks before reusing an idle connection: data or EOF on it means the receiver closed it.
            return self._protocol.eof or bool(self._protocol.buffer)
        names = {"ssl_object": "ssl_object", "client_addr": "sockname", "server_addr": "peername", "socket": "socket"}
        return self._transport.get_extra_info(names[info]) if info in names else None


async def dial(address: str, port: int, timeout_s: float | None) -> AsyncioStream:
    """A TCP connection to exactly `address` (an IP address: nothing is resolved here)."""
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(timeout_s):
            transport, protocol = await loop.create_connection(_Protocol, address, port)
    except TimeoutError as error:
        raise httpcore.ConnectTimeout(f"connecting to {address} port {port} timed out") from error
    except OSError as error:
        raise httpcore.ConnectError(f"connecting to {address} port {port}: {error.strerror or error}") from error
    raw = transport.get_extra_info("socket")
    if raw is not None:
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return AsyncioStream(transport, protocol)
