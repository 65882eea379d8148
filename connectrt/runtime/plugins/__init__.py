"""Plugins: discovery, the import gate, loading, versions, isolation of calls and plugin metrics.

Resolves the names a config gives (connector, converter, transform, predicate, provider) to
Python classes, and guards every call into plugin code.
"""
