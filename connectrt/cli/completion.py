"""Shell completion: ``connectrt completion bash|zsh|fish`` prints the script a shell loads,
and the completer that suggests connector names, asked of the worker the command would talk
to (context names are completed by :func:`.contexts.complete_context_names`).

The script calls ``connectrt`` back with ``_CONNECTRT_COMPLETE`` set (click's protocol); the
completers run in that short-lived process. A connector-name completion that cannot reach the
worker within 2 s, or would need a password that is not stored, suggests nothing rather than
prompt or hang.
"""

from __future__ import annotations

from typing import Any

import click
from click.shell_completion import CompletionItem, get_completion_class

__all__ = [
    "COMPLETE_VAR",
    "SHELLS",
    "complete_connector_names",
    "completion_command",
]

COMPLETE_VAR = "_CONNECTRT_COMPLETE"
SHELLS = ("bash", "zsh", "fish")
_LOOKUP_TIMEOUT_S = 2.0


def complete_connector_names(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """The connectors of the worker this command would reach, starting with ``incomplete``."""
    from connectrt.cli.remote import Connection, connect, resolve_target

    given: dict[str, Any] = {
        k: ctx.params[k]
        for k in ("context", "url", "user", "token", "insecure", "cacert")
        if ctx.params.get(k) is not None
    }
    try:
        target = resolve_target(Connection(**given), ask_password=False)
        if target.user is not None and target.password is None:
            return []  # completing must never prompt
        with connect(target, _LOOKUP_TIMEOUT_S) as client:
            names = client.connectors()
    except Exception:  # unreachable, refused, bad context: no suggestions
        return []
    return [CompletionItem(n) for n in sorted(names) if str(n).startswith(incomplete)]


@click.command("completion")
@click.argument("shell", type=click.Choice(SHELLS))
@click.pass_context
def completion_command(ctx: click.Context, shell: str) -> int:
    """Print a shell completion script.

    SHELL is bash, zsh or fish. To enable completion:

    \b
    bash:  echo 'eval "$(connectrt completion bash)"' >> ~/.bashrc
    zsh:   echo 'eval "$(connectrt completion zsh)"' >> ~/.zshrc
    fish:  connectrt completion fish > ~/.config/fish/completions/connectrt.fish

    Completes commands, options, context names and the connector names of the worker the
    command would talk to.
    """
    root = ctx.find_root().command
    cls = get_completion_class(shell)
    assert cls is not None  # SHELLS are click's built-in shells
    print(cls(root, {}, "connectrt", COMPLETE_VAR).source())
    return 0
