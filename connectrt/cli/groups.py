"""The click group class of ``connectrt``'s command groups."""

from __future__ import annotations

import click

__all__ = ["OrderedGroup"]


class OrderedGroup(click.Group):
    """A group that lists its commands in the order they were added (click sorts them by
    name), so related commands stand together: ``list``, ``get``, ``status`` before
    ``delete``."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)
