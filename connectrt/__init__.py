"""connectrt: a Kafka Connect-style connector runtime in Python."""

__version__ = "0.1.0"
