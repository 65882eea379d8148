"""Kafka clients as the runtime builds them: settings per role, SASL, TLS and overrides.

The one floor that configures librdkafka for producers, consumers and admin clients; every
floor above asks it for client settings instead of assembling them.
"""
