"""The phone operator's vocabulary, importable without a database driver (the CLI's help lists it): API key scopes
and the outcomes a reconciled request can be given."""

from __future__ import annotations

ALL_SCOPES = ("verify", "requests:read", "usage:read")
RECONCILE_OUTCOMES = ("billable", "not_billable", "failed")
