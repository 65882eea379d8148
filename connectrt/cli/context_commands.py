"""``connectrt context add | use | list | current | remove``: named workers, as kcctl has.

A context is stored in the user's config file (:mod:`.contexts`); the management commands use
the current one unless given ``--context``, ``--url`` or ``CONNECTRT_URL``. Secrets stay in
their own files: a context records the path of a password or token file, never its content,
and no command prints a secret.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import click

from connectrt.cli.contexts import Context, ContextFile, complete_context_names
from connectrt.cli.groups import OrderedGroup
from connectrt.cli.output import print_json, print_table
from connectrt.cli.remote import json_flag
from connectrt.errors import ConfigError

__all__ = ["context"]


def _readable_file(path: str | None, option: str) -> str | None:
    """``path`` made absolute (a context is used from any directory), if it is a readable file."""
    if path is None:
        return None
    p = Path(path).expanduser()
    try:
        with p.open("rb"):
            pass
    except OSError as e:
        raise ConfigError(f"{option} {path}: {e.strerror or e}") from None
    return str(p.resolve())


@click.group("context", cls=OrderedGroup)
def context() -> None:
    """Name the workers you manage and switch between them.

    The contexts live in $XDG_CONFIG_HOME/connectrt/config.json (~/.config/connectrt/ by
    default), mode 0600. They hold paths to password and token files, never the secrets.
    """


@context.command("add")
@click.argument("name")
@click.option("--url", required=True, metavar="URL", help="The worker's REST URL.")
@click.option(
    "--user",
    metavar="USER",
    help="HTTP Basic user name; the password comes from --password-file, or is asked.",
)
@click.option(
    "--password-file",
    metavar="FILE",
    help="File whose first line is --user's password (read at each use, never copied).",
)
@click.option(
    "--token-file",
    metavar="FILE",
    help="File whose first line is a bearer token (read at each use, never copied).",
)
@click.option("--ca", metavar="FILE", help="CA bundle to verify the worker's TLS certificate.")
@click.option("--insecure", is_flag=True, help="Do not verify the worker's TLS certificate.")
@json_flag()
def _add(
    name: str,
    url: str,
    user: str | None,
    password_file: str | None,
    token_file: str | None,
    ca: str | None,
    insecure: bool,
    as_json: bool,
) -> int:
    """Add context NAME (or replace it); the first context added becomes the current one."""
    if not name.strip():
        raise ConfigError("A context name must not be empty")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"--url {url!r} is not an http:// or https:// URL")
    if parts.password is not None:
        raise ConfigError("--url must not hold a password: use --user with --password-file")
    if user is not None and ":" in user:
        raise ConfigError(
            "--user takes a user name only; put the password in a file and give --password-file"
        )
    if password_file and not user:
        raise ConfigError("--password-file needs --user")
    if token_file and user:
        raise ConfigError("--user and --token-file cannot be used together")
    if ca and insecure:
        raise ConfigError("--ca and --insecure cannot be used together")
    entry = Context(
        name,
        url.rstrip("/"),
        user,
        _readable_file(password_file, "--password-file"),
        _readable_file(token_file, "--token-file"),
        _readable_file(ca, "--ca"),
        insecure,
    )
    store = ContextFile.load()
    replaced = name in store.contexts
    store.contexts[name] = entry
    if store.current is None:
        store.current = name
    store.save()
    if as_json:
        print_json({"name": name, "current": store.current == name, **entry.to_json()})
    else:
        note = " (current)" if store.current == name else ""
        print(f"{'Replaced' if replaced else 'Added'} context {name}: {entry.url}{note}")
    return 0


@context.command("use")
@click.argument("name", shell_complete=complete_context_names)
@json_flag()
def _use(name: str, as_json: bool) -> int:
    """Make NAME the current context."""
    store = ContextFile.load()
    entry = store.get(name)
    store.current = name
    store.save()
    if as_json:
        print_json({"name": name, **entry.to_json()})
    else:
        print(f"Using context {name}: {entry.url}")
    return 0


@context.command("list")
@json_flag()
def _list(as_json: bool) -> int:
    """List the contexts, the current one marked with '*'."""
    store = ContextFile.load()
    if as_json:
        contexts = {n: c.to_json() for n, c in sorted(store.contexts.items())}
        print_json({"current": store.current, "contexts": contexts})
        return 0
    if not store.contexts:
        print(f"No contexts in {store.path}; add one with 'connectrt context add NAME --url URL'")
        return 0
    rows = [
        ["*" if n == store.current else "", n, c.url, c.auth_summary(), _tls(c)]
        for n, c in sorted(store.contexts.items())
    ]
    print_table(rows, header=["CURRENT", "NAME", "URL", "AUTH", "TLS"])
    return 0


def _tls(c: Context) -> str:
    if not c.url.startswith("https:"):
        return "-"
    return "not verified" if c.insecure else (f"CA {c.ca}" if c.ca else "system CAs")


@context.command("current")
@json_flag()
def _current(as_json: bool) -> int:
    """Print the current context's name and URL."""
    entry = ContextFile.load().current_context()
    if entry is None:
        raise ConfigError("No current context: pick one with 'connectrt context use NAME'")
    if as_json:
        print_json({"name": entry.name, **entry.to_json()})
    else:
        print(f"{entry.name}: {entry.url}")
    return 0


@context.command("remove")
@click.argument("name", shell_complete=complete_context_names)
@json_flag()
def _remove(name: str, as_json: bool) -> int:
    """Remove context NAME (the secret files it points to are left alone)."""
    store = ContextFile.load()
    store.get(name)
    del store.contexts[name]
    if store.current == name:
        store.current = None
    store.save()
    if as_json:
        print_json({"removed": name, "current": store.current})
    else:
        print(f"Removed context {name}")
    return 0
