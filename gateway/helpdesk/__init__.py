"""The helpdesk gateway (reference: docs/helpdesk.md): its REST API (`rest/`), its procedures (`procedures/`), people's
accounts (`accounts/`) and the inbound provider webhooks (`inbound/`), assembled by `app.py`."""
