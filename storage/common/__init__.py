"""What every service's storage shares: engine and units of work, group commit, the base model, API keys."""
