"""Each service's wiring: its topics, gateway, processors, demo account and operator tasks, on the shared platform.
Only a running command imports these; `signalyard/registry/` describes the services to the CLI."""
