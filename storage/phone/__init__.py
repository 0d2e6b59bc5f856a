"""Phone verification storage: tenants, prices, requests (the outbox), the ledger."""
