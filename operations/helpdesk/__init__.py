"""The helpdesk's operations: tickets and their conversations, customers, the team, the activity log, search,
attachments, webhook subscriptions, channels and API keys."""
