"""Kafka client settings, topic creation, pacing, the AsyncAPI document and the webhook-events topic, for every
service's topics."""
