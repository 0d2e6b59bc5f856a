"""Litestar gateways: one app per service, validating requests and answering from storage."""
