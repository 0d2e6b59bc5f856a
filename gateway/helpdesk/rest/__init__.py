"""The helpdesk's REST API (`/api/v1/...`, bearer keys): one controller module per resource, each route a thin adapter
over its operation (operations/helpdesk) with the scope it needs declared as a guard."""
