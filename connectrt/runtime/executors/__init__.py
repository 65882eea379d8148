"""Running tasks: the runner factory, the thread and process executors, the task payload."""
