"""The photo compliance gateway (contract: spec/photo-compliance.md)."""
