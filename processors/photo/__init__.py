"""Photo compliance processing: image checks against a policy, verdicts, webhook events."""
