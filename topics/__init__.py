"""Topic names, partition keys and msgspec message types shared by gateways, processors and stream consumers."""
