"""The helpdesk service's storage: organizations, accounts and sessions, the team, tickets and their conversations,
customers, the activity log, uploads, search, channels and what they received (inbound events, calls, orders), and
the replies on their way to customers (outbound)."""
