"""Offsets: the worker's offset stores, the offset admin and the task-side reader."""
