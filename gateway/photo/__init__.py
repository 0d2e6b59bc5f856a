"""The photo compliance gateway (reference: docs/photo.md)."""
