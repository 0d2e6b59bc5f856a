"""Each service's wiring: its topics, gateway, processors and demo account, on the shared platform. Only a running
command imports these; `signalyard/registry/` describes the services to the CLI, `signalyard/tasks/` holds their
operator tasks."""
