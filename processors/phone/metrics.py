"""Prometheus metrics of the phone processors."""

from prometheus_client import Counter, Gauge

HANDLED = Counter(
    "signalyard_phone_processed_total", "Verify requests handled by a processor, by resulting state", ["outcome"]
)
FAILED = Counter("signalyard_phone_processing_failures_total", "Batches that raised and were redelivered")
LAG = Gauge("signalyard_phone_consumer_lag", "Messages behind the partition end after the last batch", ["partition"])
OUTBOX_PENDING = Gauge("signalyard_phone_outbox_pending", "Requests stored as pending (accepted, not finished)")
