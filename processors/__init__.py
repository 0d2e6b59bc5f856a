"""FastStream processors: the work behind each service's topics."""
