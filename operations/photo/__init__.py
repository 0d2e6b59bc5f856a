"""Photo's operations: what the REST routes and the dashboard's pages both do, written once (keys, the review, the
history and its queue, usage)."""
