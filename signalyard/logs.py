"""Structured JSON logs: one line per event, the request id bound where there is one, never a key or secret."""

from __future__ import annotations

import functools
import json
import logging
import re
import sys
from collections.abc import Mapping
from typing import Any

import structlog

_REDACTED = "[redacted]"
_SECRET_NAME = re.compile(r"secret|token|passw(?:or)?d|key")
_SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "x-api-key", "cookie", "set-cookie"})
# Names that contain "key" yet hold no secret: a key's id and its display prefix identify a key without granting
# access, an Idempotency-Key is the client's request id, `keys` is a count. Keys quoted in them are still scrubbed.
_NOT_SECRET = frozenset({"key_id", "key_prefix", "idempotency_key", "keys"})
# Matched against the rendered JSON line, hence a token that stops at a quote or an escape.
_SECRET_TEXT = re.compile(
    r"(?i)(bearer\s+)[^\s\"\\]+"
    # A key's display prefix (ApiKey.display_prefix, at most eight characters after the environment) is shown to its
    # owner and kept; a longer run is taken for a key. The helpdesk's keys, sign-in links and refresh tokens all start
    # with `hd_<kind>_`, photo's sign-in links and dashboard sessions with `pc_<kind>_`.
    r"|((?:sy|pc)_(?:live|test)_|whsec_|(?:hd|pc)_[a-z]+_)[\w+/=-]{9,}"
)


# Every match holds one of these, and looking for them is far cheaper than the search: it runs on every line.
_MARKERS = ("bearer", "_live_", "_test_", "whsec_", "hd_", "pc_")


@functools.lru_cache(maxsize=1024)  # the same few field names come back on every line
def _is_secret_name(name: object) -> bool:
    if isinstance(name, bytes):
        name = name.decode("latin-1")
    if not isinstance(name, str):
        return False
    name = name.lower()
    return name.replace("-", "_") not in _NOT_SECRET and (name in _SECRET_HEADERS or bool(_SECRET_NAME.search(name)))


def _redacted_items(mapping: Mapping[Any, Any]) -> dict[Any, Any]:
    """The items of `mapping` that redaction changes, with their new values."""
    changed = {}
    for name, value in mapping.items():
        clean = _REDACTED if _is_secret_name(name) else _clean(value)
        if clean is not value:
            changed[name] = clean
    return changed


def _clean(value: object) -> object:
    """`value` with its fields named like secrets redacted: the very same object when it has none (no copy)."""
    if isinstance(value, (str, int, float)) or value is None:  # most values: spared the slower Mapping check
        return value
    if isinstance(value, (list, tuple)):
        # Headers as ASGI and httpx give them: (name, value) pairs.
        if len(value) == 2 and isinstance(value[0], (str, bytes)) and _is_secret_name(value[0]):
            return [value[0], _REDACTED]
        items = [_clean(item) for item in value]
        return value if all(new is old for new, old in zip(items, value, strict=True)) else items
    if isinstance(value, Mapping):
        changed = _redacted_items(value)
        return {**value, **changed} if changed else value
    return value


def _drop_secrets(_: object, __: str, event: structlog.typing.EventDict) -> structlog.typing.EventDict:
    """Redact the fields named like secrets, at any depth."""
    event.update(_redacted_items(event))
    return event


def _scrub(line: str) -> str:
    """`line` without the keys and bearer tokens quoted in it, whichever field (exception, message, repr) holds them."""
    lowered = line.lower()
    if not any(marker in lowered for marker in _MARKERS):
        return line
    return _SECRET_TEXT.sub(lambda found: (found.group(1) or found.group(2)) + _REDACTED, line)


def _dumps(event: structlog.typing.EventDict, **kw: Any) -> str:
    return _scrub(json.dumps(event, **kw))


def configure(level: str = "info") -> None:
    """Our events and the libraries' (uvicorn, aiokafka, ...) as JSON lines on stderr."""
    shared: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=shared,
            # Redaction comes last, so it sees every line, ours and the libraries', with its exception rendered.
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.format_exc_info,
                _drop_secrets,
                structlog.processors.JSONRenderer(serializer=_dumps),
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
