"""The ``connectrt`` command: workers, the embedded broker, the demo and REST management."""

from connectrt.cli.main import main

__all__ = ["main"]
