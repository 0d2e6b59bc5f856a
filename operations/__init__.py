"""The services' operations, each written once below the entrypoints that reach it (REST routes, procedures, pages
and processors): it takes who acts and typed input, checks access, writes one unit of work with its activity and
webhook events, and returns a typed record."""
