"""What every service's processors share: the batch consumer, offsets, the outbox sweeper, metrics."""
