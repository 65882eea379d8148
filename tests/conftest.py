"""Shared fixtures come from connectrt's pytest plugin (the same ones plugin authors use).

The suite's own plugins (``tests.plugins``, and connectors some test modules define) are named
by Python path; a worker loads such classes only from the packages its ``plugin.packages``
lists, so the test workers list ``tests`` (see ``connectrt.testing.worker_defaults``).
"""

from connectrt.testing.worker_defaults import allow_plugin_packages

pytest_plugins = ["connectrt.testing.pytest_plugin"]

allow_plugin_packages("tests")
