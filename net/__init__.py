"""Outgoing network access under the address policy (wire/addresses.py): the guarded HTTP client through which the
webhook deliverer reaches receivers and the helpdesk gateway fetches marketplace signing certificates. It imports
nothing of ours but `wire`, so that gateways and processors may both use it."""
