"""What crosses the wire, as pure code every layer may use: the addresses we may dial, signature schemes, timestamps
(how we write them, how old a signed one may be), signed URLs, opaque tokens and the shape of a service's webhooks.
It imports nothing of ours, does no I/O, and holds no service's specifics."""
