"""The helpdesk's procedures (`/api/trpc/...`, session cookies): the wire, who may call each (`access`), and one module
per group of procedures, each a thin adapter over its operations (operations/helpdesk)."""
