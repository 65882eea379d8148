"""Running a management command against a worker's REST API.

:func:`remote` turns a handler ``handler(client, as_json, **params) -> exit status`` into a
click command callback that takes the connection options every such command has (``--context``,
``--url``, ``--user``, ``--token``, ``--insecure``/``--cacert``, ``--timeout``) and ``--json``,
connects, runs the handler and prints errors: a server error as
``error: <message> (HTTP <status>)``, an unreachable worker as ``error: cannot reach <url>: ...``;
both exit with status 1.

Where the worker and credentials come from (:func:`resolve_target`), first match wins:

1. the command's own flags (``--url``, ``--user``, ``--token``, ``--cacert``, ``--insecure``);
2. the context named by ``--context`` or ``CONNECTRT_CONTEXT``;
3. ``CONNECTRT_URL``, ``CONNECTRT_USER``, ``CONNECTRT_TOKEN``;
4. the current context (``connectrt context use``), unless a URL came from 1 or 3;
5. ``http://localhost:8083`` without credentials.

A context's credentials are only ever sent to that context's URL or to a URL the user typed
alongside an explicit ``--context``; credentials given by flag or environment replace the
context's rather than mix with them.
"""

from __future__ import annotations

import functools
import getpass
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

from connectrt.cli.contexts import (
    Context,
    ContextFile,
    complete_context_names,
    read_secret_file,
)
from connectrt.cli.output import fail

if TYPE_CHECKING:
    from connectrt.client import ConnectClient

__all__ = [
    "DEFAULT_URL",
    "JSON_HELP",
    "Connection",
    "Target",
    "connect",
    "json_flag",
    "remote",
    "resolve_target",
    "run_remote",
]

DEFAULT_URL = "http://localhost:8083"

_CONNECTION_KEYS = ("context", "url", "user", "token", "insecure", "cacert", "timeout")


JSON_HELP = "Print the answer as JSON (the server's, as is), for scripts."
LOCAL_JSON_HELP = "Print the result as JSON, for scripts."


def json_flag() -> Callable[[Any], Any]:
    """The ``--json`` option (parameter ``as_json``) of a command that runs without a worker."""
    return click.option("--json", "as_json", is_flag=True, help=LOCAL_JSON_HELP)


def _connection_options() -> list[click.Option]:
    return [
        click.Option(
            ["--context"],
            metavar="NAME",
            shell_complete=complete_context_names,
            help="Use this named context (env CONNECTRT_CONTEXT; default: the current one, "
            "see 'connectrt context').",
        ),
        click.Option(
            ["--url"],
            metavar="URL",
            help="Worker REST URL (env CONNECTRT_URL; default: the context's, else "
            f"{DEFAULT_URL}).",
        ),
        click.Option(
            ["--user"],
            metavar="USER[:PASS]",
            help="HTTP Basic credentials (env CONNECTRT_USER); without ':PASS' the password is "
            "asked.",
        ),
        click.Option(["--token"], metavar="TOKEN", help="Bearer token (env CONNECTRT_TOKEN)."),
        click.Option(
            ["--insecure"], is_flag=True, help="Do not verify the worker's TLS certificate."
        ),
        click.Option(
            ["--cacert"],
            metavar="FILE",
            type=click.Path(dir_okay=False),
            help="CA bundle to verify the worker's TLS certificate with.",
        ),
        click.Option(
            ["--timeout"],
            type=float,
            default=30.0,
            show_default=True,
            metavar="SECONDS",
            help="Request timeout in seconds.",
        ),
        click.Option(["--json", "as_json"], is_flag=True, help=JSON_HELP),
    ]


@dataclass(frozen=True)
class Connection:
    """The connection options as given on the command line (None where not given)."""

    context: str | None = None
    url: str | None = None
    user: str | None = None
    token: str | None = None
    insecure: bool = False
    cacert: str | None = None
    timeout: float = 30.0


@dataclass(frozen=True)
class Target:
    """Where a command goes and how it authenticates, once flags, environment and contexts
    are resolved. ``password`` is None when it still has to be asked for."""

    url: str
    user: str | None = None
    password: str | None = None
    token: str | None = None
    verify: bool | str = True
    context: str | None = None


def resolve_target(conn: Connection, ask_password: bool = True) -> Target:
    """The worker and credentials for ``conn`` (see the module docstring for the order).
    Secret files are read here; ``ask_password=False`` leaves a missing password None."""
    env_url = os.environ.get("CONNECTRT_URL") or None
    env_user = os.environ.get("CONNECTRT_USER") or None
    env_token = os.environ.get("CONNECTRT_TOKEN") or None
    named = conn.context or os.environ.get("CONNECTRT_CONTEXT") or None
    ctx: Context | None
    if named:
        ctx = ContextFile.load().get(named)
    elif conn.url or env_url:
        ctx = None  # a URL of its own: the current context's credentials must not go there
    else:
        ctx = ContextFile.load().current_context()

    url = conn.url or (ctx.url if ctx else None) or env_url or DEFAULT_URL
    verify: bool | str = True
    if conn.insecure:
        verify = False
    elif conn.cacert:
        verify = conn.cacert
    elif ctx is not None:
        verify = False if ctx.insecure else (ctx.ca or True)

    # An explicitly named context beats the environment's credentials, as it beats its URL.
    user_spec = conn.user or (None if named else env_user)
    token = conn.token or (None if named else env_token)
    if user_spec or token:  # credentials of their own replace the context's
        user = password = None
        if user_spec:
            user, sep, pw = user_spec.partition(":")
            password = pw if sep else None
    elif ctx is not None and ctx.token_file:
        user, password = None, None
        token = read_secret_file(ctx.token_file, f"token (context {ctx.name})")
    elif ctx is not None and ctx.user:
        user = ctx.user
        password = (
            read_secret_file(ctx.password_file, f"password (context {ctx.name})")
            if ctx.password_file
            else None
        )
    else:
        user = password = None
    if user is not None and password is None and ask_password:
        password = getpass.getpass(f"Password for {user}: ")
    return Target(url, user, password, token, verify, ctx.name if ctx else None)


def connect(target: Target, timeout: float) -> ConnectClient:
    """A client for ``target`` (an OSError when its CA file cannot be used)."""
    from connectrt.client import ConnectClient

    auth = (target.user, target.password or "") if target.user is not None else None
    return ConnectClient(
        target.url, auth=auth, token=target.token, verify=target.verify, timeout=timeout
    )


Handler = Callable[..., int]
"""``handler(client, as_json, **params)``: runs one command against the worker."""


def remote(handler: Handler) -> Callable[..., int]:
    """Decorate a handler into a command callback with the connection options and ``--json``.

    Use below ``@group.command(...)`` and above the handler's own ``@click.argument``/
    ``@click.option`` decorators; the handler's options are listed first in its help."""

    @functools.wraps(handler)
    def command(**params: Any) -> int:
        conn = Connection(**{k: params.pop(k) for k in _CONNECTION_KEYS})
        as_json = bool(params.pop("as_json"))
        return run_remote(conn, lambda client: handler(client, as_json, **params))

    own = list(getattr(handler, "__click_params__", []))
    # click lists params in the reverse of this list: the command's own first, then these.
    command.__click_params__ = list(reversed(_connection_options())) + own  # type: ignore[attr-defined]
    return command


def run_remote(conn: Connection, call: Callable[[ConnectClient], int]) -> int:
    """Connect as ``conn`` says and run ``call``; print a failure and return its status."""
    from connectrt.client import ClientError, ConnectionFailed

    if logging.getLogger().getEffectiveLevel() > logging.DEBUG:
        logging.getLogger("httpx").setLevel(logging.WARNING)  # no INFO line per request
    if conn.insecure and conn.cacert:
        return fail("--insecure and --cacert cannot be used together")
    target = resolve_target(conn)
    try:
        client = connect(target, conn.timeout)
    except OSError as e:  # unreadable --cacert / context CA
        return fail(f"cannot use CA file {target.verify}: {e.strerror or e}")
    try:
        with client:
            return call(client)
    except ClientError as e:
        lines = e.message.splitlines() or [""]
        return fail(f"{lines[0]} (HTTP {e.status})", lines[1:])
    except ConnectionFailed as e:
        return fail(str(e))
