"""The helpdesk service's tables: organizations, users and their sessions, one-time links, outgoing mail."""
