"""``connectrt context add|use|list|show|remove``: named workers for the management commands.

See :mod:`.contexts` for where they are kept and how a command picks one.
"""

from __future__ import annotations

import click
import click.shell_completion

from connectrt.cli.contexts import Context, ContextStore
from connectrt.cli.output import print_json, print_table

__all__ = ["context"]


def _complete_context(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[click.shell_completion.CompletionItem]:
    try:
        names = ContextStore().names()
    except Exception:
        return []
    return [click.shell_completion.CompletionItem(n) for n in names if n.startswith(incomplete)]


@click.group(
    help="Save workers under names and pick the one the management commands use. Contexts "
    "are kept in contexts.json in the user's config directory (CONNECTRT_CONFIG_DIR)."
)
def context() -> None:
    pass


@context.command(help="Save (or replace) context NAME.")
@click.argument("name")
@click.option("--url", required=True, help="The worker's REST URL, e.g. https://connect:8083")
@click.option(
    "--user",
    metavar="USER[:PASS]",
    help="HTTP Basic user; with ':PASS' the password is saved too (the file is mode 0600)",
)
@click.option("--token", help="Bearer token to save (the file is mode 0600)")
@click.option("--cacert", metavar="FILE", help="CA bundle to verify the worker's certificate")
@click.option("--insecure", is_flag=True, help="Do not verify the worker's TLS certificate")
@click.option("--use", "use_it", is_flag=True, help="Make it the current context")
def add(
    name: str,
    url: str,
    user: str | None,
    token: str | None,
    cacert: str | None,
    insecure: bool,
    use_it: bool,
) -> int:
    if insecure and cacert:
        raise click.UsageError("--insecure and --cacert cannot be used together")
    store = ContextStore()
    store.add(name, Context(url, user, token, cacert, insecure), use=use_it)
    current = " (current)" if store.current == name else ""
    print(f"Saved context {name}{current} in {store.path}")
    return 0


@context.command(help="Make NAME the current context.")
@click.argument("name", shell_complete=_complete_context)
def use(name: str) -> int:
    ContextStore().use(name)
    print(f"Using context {name}")
    return 0


@context.command("list", help="List the contexts; * marks the current one.")
@click.option("--json", "as_json", is_flag=True, help="Print them as JSON (secrets hidden)")
def list_contexts(as_json: bool) -> int:
    store = ContextStore()
    current = store.current
    contexts = {name: store.get(name) for name in store.names()}
    if as_json:
        print_json({"current": current, "contexts": {n: c.shown() for n, c in contexts.items()}})
        return 0
    if not contexts:
        print("No contexts yet: connectrt context add NAME --url URL")
        return 0
    rows = [["", "NAME", "URL", "AUTH"]]
    for name, saved in contexts.items():
        auth = "token" if saved.token else (f"user {saved.shown()['user']}" if saved.user else "")
        rows.append(["*" if name == current else "", name, saved.url, auth])
    print_table(rows)
    return 0


@context.command(help="Show context NAME (default: the current one), secrets hidden.")
@click.argument("name", required=False, shell_complete=_complete_context)
def show(name: str | None) -> int:
    store = ContextStore()
    name = name or store.current
    if name is None:
        print("No current context")
        return 1
    for key, value in store.get(name).shown().items():
        print(f"{key}: {value}")
    return 0


@context.command(help="Delete context NAME.")
@click.argument("name", shell_complete=_complete_context)
def remove(name: str) -> int:
    ContextStore().remove(name)
    print(f"Removed context {name}")
    return 0
