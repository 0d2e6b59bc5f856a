"""Photo's webhooks on the shared engine: `X-Verify-Signature` (hex HMAC-SHA256 of the raw body) and
`X-Verify-Timestamp`, retried with backoff over about 3 days."""

from processors.common.webhooks import BACKOFF_OVER_3_DAYS, WebhookProfile

PROFILE = WebhookProfile(
    service="photo",
    signature_header="X-Verify-Signature",
    timestamp_header="X-Verify-Timestamp",
    schedule=BACKOFF_OVER_3_DAYS,
    id_prefix="whk",
)
