"""Structured JSON logs: one line per event, the request id bound where there is one, never a key or secret."""

from __future__ import annotations

import logging
import sys

import structlog

_SECRET_FIELDS = {"authorization", "api_key", "key", "token", "password", "secret"}


def _drop_secrets(_: object, __: str, event: structlog.typing.EventDict) -> structlog.typing.EventDict:
    for name in _SECRET_FIELDS & event.keys():
        event[name] = "[redacted]"
    return event


def configure(level: str = "info") -> None:
    """Our events and the libraries' (uvicorn, aiokafka, ...) as JSON lines on stderr."""
    shared: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        _drop_secrets,
    ]
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=shared,
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.format_exc_info,
                structlog.processors.JSONRenderer(),
            ],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for noisy in ("aiokafka", "faststream", "uvicorn.access", "httpx", "alembic"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
    structlog.configure(
        # Events under the level are dropped before any processor runs (the access log runs on every request).
        processors=[structlog.stdlib.filter_by_level, *shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
