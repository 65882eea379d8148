"""The worker: the connectors and tasks it runs, its health, zombie fencing."""
