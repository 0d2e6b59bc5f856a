"""Settings, read once from the environment."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path


def _env(name: str, default: str | None = None) -> str | None:
    value = os.environ.get(name)
    return value if value not in (None, "") else default


@dataclass(frozen=True)
class Settings:
    data_dir: Path = field(default_factory=lambda: Path(_env("SIGNALYARD_DATA_DIR", ".signalyard") or ".signalyard"))
    """Where the embedded SQLite file lives (SIGNALYARD_DATA_DIR, default ./.signalyard)."""
    database_url: str | None = field(default_factory=lambda: _env("SIGNALYARD_DATABASE_URL"))
    """SQLAlchemy URL replacing the embedded SQLite file, e.g. postgresql+asyncpg://user@host/db."""
    kafka_bootstrap: str | None = field(default_factory=lambda: _env("SIGNALYARD_KAFKA_BOOTSTRAP"))
    """Kafka bootstrap servers replacing the embedded broker, e.g. kafka:9092."""
    redis_url: str | None = field(default_factory=lambda: _env("SIGNALYARD_REDIS_URL"))
    """Redis for rate limits shared by several gateways (default: in process memory)."""
    host: str = field(default_factory=lambda: _env("SIGNALYARD_HOST", "127.0.0.1") or "127.0.0.1")
    """Address the gateways listen on."""
    phone_port: int = field(default_factory=lambda: int(_env("SIGNALYARD_PHONE_PORT", "8001") or 8001))
    """Port of the phone gateway."""
    topic_prefix: str = field(default_factory=lambda: _env("SIGNALYARD_TOPIC_PREFIX", "") or "")
    """Prefix for every topic name (lets several deployments or test runs share one cluster)."""
    topic_partitions: int | None = field(
        default_factory=lambda: int(p) if (p := _env("SIGNALYARD_TOPIC_PARTITIONS")) else None
    )
    """Partitions of topics this launcher creates; the ceiling on useful processor replicas. Unset: 8 on a configured
    Kafka, 1 on the embedded broker (one machine, one processor; every partition adds fetch latency there)."""
    phone_wait_ms: int = field(default_factory=lambda: int(_env("SIGNALYARD_PHONE_WAIT_MS", "5000") or 5000))
    """How long POST /verify waits for its result before answering 202."""
    publish_timeout_s: float = field(default_factory=lambda: float(_env("SIGNALYARD_PUBLISH_TIMEOUT_S", "2") or 2))
    """How long a publish may wait for the broker; past it the stored request is left to the sweeper."""
    phone_rate_limit: str = field(
        default_factory=lambda: _env("SIGNALYARD_PHONE_RATE_LIMIT", "50/second") or "50/second"
    )
    """Rate limit per API key, in the `limits` notation (e.g. 50/second, 1000/minute)."""
    auth_cache_s: float = field(default_factory=lambda: float(_env("SIGNALYARD_AUTH_CACHE_S", "5") or 5))
    """How long a key's owner is cached: the delay before a revocation or suspension takes effect."""
    sweep_after_s: float = field(default_factory=lambda: float(_env("SIGNALYARD_SWEEP_AFTER_S", "30") or 30))
    """A request pending this long is published again by the sweeper."""
    sweep_every_s: float = field(default_factory=lambda: float(_env("SIGNALYARD_SWEEP_EVERY_S", "5") or 5))
    """How often the sweeper looks."""
    sandbox_slow_ms: int = field(default_factory=lambda: int(_env("SIGNALYARD_SANDBOX_SLOW_MS", "6000") or 6000))
    """How long the sandbox's slow magic number takes (longer than the wait: it shows the 202 path)."""
    carrier_lookup_url: str = field(
        default_factory=lambda: (
            _env("SIGNALYARD_CARRIER_LOOKUP_URL", "https://lookups.twilio.com") or "https://lookups.twilio.com"
        )
    )
    """Base URL of the Twilio Lookup v2 compatible carrier lookup used by live keys."""
    carrier_lookup_sid: str | None = field(default_factory=lambda: _env("SIGNALYARD_CARRIER_LOOKUP_SID"))
    """Account SID for the carrier lookup (basic auth user); unset: live requests get 503 provider_unconfigured."""
    carrier_lookup_token: str | None = field(default_factory=lambda: _env("SIGNALYARD_CARRIER_LOOKUP_TOKEN"))
    """Auth token for the carrier lookup (basic auth password)."""
    carrier_lookup_timeout_s: float = field(
        default_factory=lambda: float(_env("SIGNALYARD_CARRIER_LOOKUP_TIMEOUT_S", "3") or 3)
    )
    """Timeout of one carrier lookup attempt."""
    carrier_lookup_retries: int = field(
        default_factory=lambda: int(_env("SIGNALYARD_CARRIER_LOOKUP_RETRIES", "2") or 2)
    )
    """Retries after a timeout or 5xx before the request fails with provider_unavailable."""
    processor_metrics_port: int | None = field(
        default_factory=lambda: int(p) if (p := _env("SIGNALYARD_PROCESSOR_METRICS_PORT")) else None
    )
    """Port of the /metrics endpoint of a processors-only process (unset: none)."""
    log_level: str = field(default_factory=lambda: _env("SIGNALYARD_LOG_LEVEL", "info") or "info")
    """Log level (debug, info, warning, error)."""

    def partitions(self, *, embedded: bool) -> int:
        """Partitions for the topics this launcher creates (see `topic_partitions`)."""
        if self.topic_partitions is not None:
            return self.topic_partitions
        return 1 if embedded else 8

    @property
    def sqlite_path(self) -> Path:
        return self.data_dir / "signalyard.db"
