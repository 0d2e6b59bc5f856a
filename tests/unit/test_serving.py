"""The one override of uvicorn we keep (`bootstrap.Server.capture_signals`) still takes effect: uvicorn's `serve`
installs its signal handlers through it. If uvicorn stops doing so, this fails before a Ctrl-C misbehaves."""

from __future__ import annotations

import inspect
import signal

import uvicorn

from signalyard.bootstrap import Server


def test_uvicorn_serve_installs_its_signal_handlers_through_capture_signals() -> None:
    assert "self.capture_signals()" in inspect.getsource(uvicorn.Server.serve)


def test_our_server_leaves_the_signal_handlers_alone() -> None:
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    server = Server(uvicorn.Config(app=lambda *_: None))
    with server.capture_signals():
        assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
