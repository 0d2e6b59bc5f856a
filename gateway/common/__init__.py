"""What every gateway shares: request ids, metrics, health, errors, keys, idempotency, limits, waiting."""
