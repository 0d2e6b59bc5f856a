"""The launcher: the one place where broker, storage, settings, gateways and processors are wired."""
