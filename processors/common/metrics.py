"""Prometheus metrics every service's processors report, labelled by service."""

from prometheus_client import Counter, Gauge

PROCESSED = Counter(
    "signalyard_processed_total", "Requests handled by a processor, by resulting state", ["service", "outcome"]
)
FAILED_BATCHES = Counter(
    "signalyard_processing_failures_total", "Batches that raised and were redelivered", ["service"]
)
LAG = Gauge(
    "signalyard_consumer_lag",
    "Messages behind the partition end after the last batch",
    ["service", "topic", "partition"],
)
OUTBOX_PENDING = Gauge("signalyard_outbox_pending", "Requests stored as pending (accepted, not finished)", ["service"])
