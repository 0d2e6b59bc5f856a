"""The helpdesk's inbound webhook endpoints (section 4.6): one module per provider kind, on the shared steps of
`common.py` (route the call to its channel, check its signature over the raw bytes, store it with its
de-duplication key, publish it, answer as the provider expects)."""
