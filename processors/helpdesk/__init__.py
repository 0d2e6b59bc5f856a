"""The helpdesk's processors: the inbound processors (`inbound/`), the reply sender (`outbound`) and the activity log's
relay to its topic (the outgoing webhooks run on the platform's engine, processors/common/webhooks)."""
