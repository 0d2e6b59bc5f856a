"""The photo compliance service's tables: customers, verifications."""
