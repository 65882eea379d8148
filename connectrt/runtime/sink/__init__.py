"""Sink tasks: the consumer loop, record conversion, assignment and offset commits after put."""
