"""Shared fixtures come from connectrt's pytest plugin (the same ones plugin authors use)."""

pytest_plugins = ["connectrt.testing.pytest_plugin"]
