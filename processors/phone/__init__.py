"""Phone verification processing: carrier lookups, caller-ID reading, name matching, billing."""
