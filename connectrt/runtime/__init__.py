"""The worker runtime, in floors; each imports only from the floors below it.

From the top: ``herder`` (management), ``worker`` and ``dlq_replay``, ``executors`` (threads and
processes that run tasks), ``source`` and ``sink`` (one per task kind), ``tasks`` (the life of
one task around plugin code) and ``tracing`` (record-level OpenTelemetry tracing), ``offsets``,
``config``, ``plugins``, ``secrets`` and ``clients``, and the ground: errors, status, metrics,
redaction and properties files. The ``runtime-floors`` import contract in ``pyproject.toml``
keeps that order.
"""
