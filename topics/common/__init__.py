"""Kafka client settings, topic creation and the AsyncAPI document, for every service's topics."""
