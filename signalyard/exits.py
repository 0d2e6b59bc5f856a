"""The console script's exit statuses besides 0 (docs/operations.md lists them)."""

from __future__ import annotations

PROCESSORS_EXITED = 1
"""`up`: a processors child died, so `up` stopped everything rather than answer 202 forever."""
USAGE = 2
"""A bad setting, argument or operator request (argparse exits with it too)."""
PORT_UNAVAILABLE = 3
"""A port to listen on is in use (or not allowed); nothing was started."""
INTERRUPTED = 130
"""Stopped by Ctrl-C or SIGTERM before it had started; what it had started is stopped."""


class PortUnavailable(Exception):
    """A port cannot be listened on; the message is the one line the operator sees, naming the setting to change
    (exit status PORT_UNAVAILABLE)."""
