"""Settings: typed groups (the platform's, then one per service), read once from the environment and checked when a
process starts. A bad value stops the process with one line naming the variable and what it accepts."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

G = TypeVar("G")


class SettingError(ValueError):
    """One setting's value is not acceptable; the message is the one line the operator sees."""


def setting(env: str, default: Any, parse: Callable[[str], Any]) -> Any:
    """A field read from the environment variable `env` with `parse` (which raises ValueError saying what it
    accepts); unset or empty: `default`."""
    return field(default=default, metadata={"env": env, "parse": parse})


def load(group: type[G], environ: Mapping[str, str]) -> G:
    """A settings group from the environment; raises SettingError for the first bad value."""
    values: dict[str, Any] = {}
    for spec in dataclasses.fields(group):  # type: ignore[arg-type]
        raw = environ.get(spec.metadata["env"], "")
        if raw == "":
            continue
        try:
            values[spec.name] = spec.metadata["parse"](raw)
        except ValueError as error:
            raise SettingError(f"{spec.metadata['env']}={raw!r} is not valid: expected {error}") from None
    return group(**values)


def documented(group: type[Any]) -> list[tuple[str, Any]]:
    """(variable, default) of every field of a group, for docs and checks."""
    return [(spec.metadata["env"], spec.default) for spec in dataclasses.fields(group)]


# Parsers: each returns the typed value or raises ValueError saying what it accepts.


def text(raw: str) -> str:
    return raw


def port(raw: str) -> int:
    value = _number(int, raw, "a port number (1-65535)")
    if not 1 <= value <= 65535:
        raise ValueError("a port number (1-65535)")
    return value


def positive(kind: type[int] | type[float]) -> Callable[[str], Any]:
    what = f"a {'whole ' if kind is int else ''}number greater than 0"

    def parse(raw: str) -> Any:
        value = _number(kind, raw, what)
        if value <= 0:
            raise ValueError(what)
        return value

    return parse


def at_least(kind: type[int] | type[float], low: float) -> Callable[[str], Any]:
    what = f"a {'whole ' if kind is int else ''}number of at least {low:g}"

    def parse(raw: str) -> Any:
        value = _number(kind, raw, what)
        if value < low:
            raise ValueError(what)
        return value

    return parse


def one_of(*choices: str) -> Callable[[str], str]:
    def parse(raw: str) -> str:
        if raw.lower() not in choices:
            raise ValueError(f"one of {', '.join(choices)}")
        return raw.lower()

    return parse


def rate_limits(raw: str) -> str:
    """`limits` notation: one or more windows, e.g. 50/second or 100/minute;6000/hour."""
    from limits import parse_many  # here, not above: `signalyard --help` reads this module and needs no parser

    try:
        parse_many(raw)
    except ValueError:
        raise ValueError("a rate limit such as 50/second, or several such as 100/minute;6000/hour") from None
    return raw


def url(*schemes: str) -> Callable[[str], str]:
    def parse(raw: str) -> str:
        if not raw.startswith(tuple(f"{scheme}://" for scheme in schemes)) or raw.endswith("://"):
            raise ValueError(f"a URL starting with {' or '.join(f'{scheme}://' for scheme in schemes)}")
        return raw

    return parse


def boolean(raw: str) -> bool:
    if raw.lower() in ("1", "true", "yes", "on"):
        return True
    if raw.lower() in ("0", "false", "no", "off"):
        return False
    raise ValueError("true or false")


def fernet_keys(raw: str) -> list[str]:
    from cryptography.fernet import Fernet  # here, not above: `signalyard --help` reads this module

    keys = [key.strip() for key in raw.split(",") if key.strip()]
    try:
        for key in keys:
            Fernet(key)
    except ValueError:
        raise ValueError("comma-separated Fernet keys (32 url-safe base64-encoded bytes each)") from None
    return keys


def _number(kind: type[int] | type[float], raw: str, what: str) -> Any:
    try:
        return kind(raw)
    except ValueError:
        raise ValueError(what) from None


@dataclass(frozen=True)
class PlatformSettings:
    """What every service's processes share."""

    data_dir: Path = setting("SIGNALYARD_DATA_DIR", Path(".signalyard"), Path)
    """Where the embedded SQLite file, the broker log and the demo keys live."""
    database_url: str | None = setting("SIGNALYARD_DATABASE_URL", None, url("sqlite+aiosqlite", "postgresql+asyncpg"))
    """SQLAlchemy URL replacing the embedded SQLite file, e.g. postgresql+asyncpg://user@host/db."""
    kafka_bootstrap: str | None = setting("SIGNALYARD_KAFKA_BOOTSTRAP", None, text)
    """Kafka bootstrap servers replacing the embedded broker, e.g. kafka:9092."""
    redis_url: str | None = setting("SIGNALYARD_REDIS_URL", None, url("redis", "rediss", "async+redis"))
    """Redis for rate limits shared by several gateways (default: in process memory)."""
    host: str = setting("SIGNALYARD_HOST", "127.0.0.1", text)
    """Address the gateways and metrics endpoints listen on."""
    topic_prefix: str = setting("SIGNALYARD_TOPIC_PREFIX", "", text)
    """Prefix for every topic and consumer-group name (lets several deployments or test runs share one cluster, each
    with its own topics and groups)."""
    topic_partitions: int | None = setting("SIGNALYARD_TOPIC_PARTITIONS", None, positive(int))
    """Partitions of topics this launcher creates; the ceiling on useful processor replicas. Unset: 8 on a configured
    Kafka, 1 on the embedded broker (one machine, one processor; every partition adds fetch latency there)."""
    publish_timeout_s: float = setting("SIGNALYARD_PUBLISH_TIMEOUT_S", 2.0, positive(float))
    """How long a publish may wait for the broker; past it the stored request is left to the sweeper."""
    sweep_after_s: float = setting("SIGNALYARD_SWEEP_AFTER_S", 30.0, positive(float))
    """A request pending this long is published again by the sweeper."""
    sweep_every_s: float = setting("SIGNALYARD_SWEEP_EVERY_S", 5.0, positive(float))
    """How often the sweeper looks."""
    processor_metrics_port: int | None = setting("SIGNALYARD_PROCESSOR_METRICS_PORT", None, port)
    """Port of the /metrics endpoint of a processors-only process (unset: none)."""
    secret_keys: list[str] | None = setting("SIGNALYARD_SECRET_KEYS", None, fernet_keys)
    """Fernet keys (comma-separated; the first encrypts, all decrypt) that seal the secrets stored at rest: webhook
    signing secrets and inbound channels' provider secrets. Unset: one random key kept in the data directory."""
    webhook_allow_private_targets: bool = setting("SIGNALYARD_WEBHOOK_ALLOW_PRIVATE_TARGETS", False, boolean)
    """Let webhooks reach private, loopback and link-local addresses (development and tests only)."""
    webhook_ca_bundle: str | None = setting("SIGNALYARD_WEBHOOK_CA_BUNDLE", None, text)
    """CA certificates (PEM file) webhook receivers' TLS certificates are checked against (default: the system's)."""
    webhook_lease_s: float | None = setting("SIGNALYARD_WEBHOOK_LEASE_S", None, positive(float))
    """How long a delivery a deliverer claimed is its own: past it (the deliverer died), another member sends it.
    Unset: twice the attempt timeout and 30 s more. Shorter than an attempt may take, a slow receiver may get a
    delivery twice."""
    log_level: str = setting("SIGNALYARD_LOG_LEVEL", "info", one_of("debug", "info", "warning", "error"))
    """Log level."""

    def partitions(self, *, embedded: bool) -> int:
        """Partitions for the topics this launcher creates (see `topic_partitions`)."""
        if self.topic_partitions is not None:
            return self.topic_partitions
        return 1 if embedded else 8

    @property
    def sqlite_path(self) -> Path:
        return self.data_dir / "signalyard.db"


@dataclass(frozen=True)
class Settings:
    """Every group: the platform's, and each registered service's by name."""

    platform: PlatformSettings
    services: Mapping[str, Any]


def load_settings(environ: Mapping[str, str], groups: Mapping[str, type[Any]]) -> Settings:
    """Every group from the environment; raises SettingError for the first bad value."""
    return Settings(load(PlatformSettings, environ), {name: load(group, environ) for name, group in groups.items()})
