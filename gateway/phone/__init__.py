"""The phone verification gateway (reference: docs/phone.md)."""
