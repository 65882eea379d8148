"""The REST API: a thin FastAPI adapter over the herder, compatible with Kafka Connect's."""
