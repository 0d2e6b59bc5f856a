"""What every service's storage shares: engine and units of work, group commit and deferred writes, the base model,
API keys, webhooks, blobs, sealed secrets, keyset paging and outboxes."""
