"""The inbound processors: each stored provider call (a mail, an SMS, a message, a call event, an order, a payment
event) made into what it means, by the module of its provider kind, on the shared steps of `service.py`."""
