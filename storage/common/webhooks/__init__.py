"""Webhook endpoints, events, deliveries and attempts of every service (`models`), by concern: the endpoints their
owners manage (`endpoints`), the events services record (`events`) and the delivery engine's queries (`deliveries`).
A service records an event in its own transaction, announces it after its commit (its message and topic:
topics.common.webhooks), and the engine fans it out into one delivery per subscribed endpoint, claims due deliveries
under a lease and records each attempt."""
