"""``connectrt completion bash|zsh|fish``: the shell's completion script for ``connectrt``.

``eval "$(connectrt completion bash)"`` in ``~/.bashrc`` (``zsh``: ``~/.zshrc``; fish:
``connectrt completion fish > ~/.config/fish/completions/connectrt.fish``). The script calls
``connectrt`` back with ``_CONNECTRT_COMPLETE`` set (click's mechanism); commands, options,
saved contexts and, from the worker of the current context, connector names complete.
"""

from __future__ import annotations

import click
from click.shell_completion import get_completion_class

__all__ = ["completion"]


@click.command(help="Print the completion script for SHELL (bash, zsh or fish).")
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def completion(shell: str) -> int:
    root = click.get_current_context().find_root().command  # the connectrt group
    cls = get_completion_class(shell)
    if cls is None:  # pragma: no cover - the choices are click's own shells
        raise click.UsageError(f"no completion for {shell}")
    print(cls(root, {}, "connectrt", "_CONNECTRT_COMPLETE").source())
    return 0
