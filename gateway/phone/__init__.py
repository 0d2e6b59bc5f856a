"""The phone verification gateway (contract: spec/phone-verification.md)."""
