"""How the gateways are served. The one override of uvicorn we keep (`bootstrap.Server.capture_signals`) still takes
effect: uvicorn's `serve` installs its signal handlers through it. If uvicorn stops doing so, this fails before a
Ctrl-C misbehaves. And the listening socket hands its connections TCP_NODELAY."""

from __future__ import annotations

import inspect
import signal
import socket

import uvicorn

from signalyard.bootstrap import Server, listen


def test_uvicorn_serve_installs_its_signal_handlers_through_capture_signals() -> None:
    assert "self.capture_signals()" in inspect.getsource(uvicorn.Server.serve)


def test_our_server_leaves_the_signal_handlers_alone() -> None:
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    server = Server(uvicorn.Config(app=lambda *_: None))
    with server.capture_signals():
        assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


def test_connections_accepted_from_our_listener_send_without_delay() -> None:
    """Without TCP_NODELAY a response written in two parts waits out the client's delayed ACK (40 ms a request)."""
    with (
        listen("127.0.0.1", 0, "SIGNALYARD_TEST_PORT") as listening,
        socket.create_connection(listening.getsockname()),
        listening.accept()[0] as accepted,
    ):
        assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
