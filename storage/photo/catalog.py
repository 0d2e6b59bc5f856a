"""The photo operator's vocabulary, importable without a database driver (the CLI's help lists it): plans."""

from __future__ import annotations

PLANS = {"starter": 1_000, "growth": 10_000, "scale": 100_000}
"""Plan -> live verifications included per calendar month; an operator may give a customer any other cap."""
DEFAULT_PLAN = "starter"
