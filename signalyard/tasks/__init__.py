"""Each service's operator tasks (`TASKS`), apart from its wiring so that a command loads only what it runs."""
