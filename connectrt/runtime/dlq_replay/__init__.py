"""Replays of dead letter queue topics back into their sink or source."""
