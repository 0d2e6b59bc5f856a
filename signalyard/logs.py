"""Structured JSON logs: one line per event, the request id bound where there is one, never a key or secret."""

from __future__ import annotations

import logging
import sys

import structlog

_SECRET_FIELDS = {"authorization", "api_key", "key", "token", "password", "secret"}


def _drop_secrets(_: object, __: str, event: dict[str, object]) -> dict[str, object]:
    for name in _SECRET_FIELDS & event.keys():
        event[name] = "[redacted]"
    return event


def configure(level: str = "info") -> None:
    logging.basicConfig(format="%(message)s", stream=sys.stderr, level=level.upper())
    for noisy in ("aiokafka", "faststream", "uvicorn.access"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            _drop_secrets,
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=True,
    )
