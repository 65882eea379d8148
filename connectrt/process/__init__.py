"""The worker processes: what ``connectrt standalone``, ``worker`` and ``spark`` assemble and run.

This package sits above ``runtime``, ``rest``, ``schema_registry`` and ``spark``: it wires the
stores, the worker, the herder and the listeners together. Nothing below it imports it.
"""
