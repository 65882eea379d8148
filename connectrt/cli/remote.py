"""Running a management command against a worker's REST API.

:func:`connection_options` adds the options every such command takes (``--url``, ``--user``,
``--token``, ``--insecure``/``--cacert``, ``--timeout``, ``--context``, ``--json``) and hands the
command a :class:`Connection`; :meth:`Connection.run` connects and runs a handler with a
:class:`~connectrt.client.ConnectClient`. Where the connection comes from, first match wins:
the command's option, its ``CONNECTRT_*`` variable, the context (``--context`` or the current
one, :mod:`.contexts`), the default ``http://localhost:8083``. A server error prints
``error: <message> (HTTP <status>)``, an unreachable worker ``error: cannot reach <url>: ...``;
both exit with status 1.
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
import click.shell_completion

from connectrt.cli.contexts import ContextStore
from connectrt.cli.output import fail

if TYPE_CHECKING:
    from connectrt.client import ConnectClient

__all__ = ["DEFAULT_URL", "Connection", "complete_connector", "connection_options"]

DEFAULT_URL = "http://localhost:8083"


@dataclass(frozen=True)
class Connection:
    """How to reach the worker, as the options and the environment say (unresolved)."""

    url: str | None
    user: str | None
    token: str | None
    insecure: bool
    cacert: str | None
    timeout: float
    context: str | None
    json: bool

    def client(self) -> ConnectClient:
        """A client for the worker (options, then environment, then context, then default)."""
        from connectrt.client import ConnectClient

        saved = ContextStore().resolve(self.context)
        url = self.url or (saved.url if saved else None) or DEFAULT_URL
        user = self.user or (saved.user if saved else None)
        token = self.token or (saved.token if saved else None)
        insecure = self.insecure or (saved.insecure if saved and not self.cacert else False)
        cacert = self.cacert or (saved.cacert if saved and not self.insecure else None)
        if insecure and cacert:
            raise click.UsageError("--insecure and --cacert cannot be used together")
        try:
            return ConnectClient(
                url,
                auth=_credentials(user),
                token=token or None,
                verify=False if insecure else (cacert or True),
                timeout=self.timeout,
            )
        except OSError as e:  # unreadable --cacert
            raise _Failed(f"cannot use CA file {cacert}: {e.strerror or e}") from None

    def run(self, handler: Callable[[ConnectClient], int | None]) -> int:
        """Connect, run ``handler(client)``, print errors; the exit status."""
        from connectrt.client import ClientError, ConnectionFailed

        if logging.getLogger().getEffectiveLevel() > logging.DEBUG:
            logging.getLogger("httpx").setLevel(logging.WARNING)  # no INFO line per request
        try:
            with self.client() as client:
                return handler(client) or 0
        except _Failed as e:
            return fail(str(e))
        except ClientError as e:
            lines = e.message.splitlines() or [""]
            return fail(f"{lines[0]} (HTTP {e.status})", lines[1:])
        except ConnectionFailed as e:
            return fail(str(e))


class _Failed(Exception):
    pass


def _credentials(user: str | None) -> tuple[str, str] | None:
    if not user:
        return None
    name, sep, password = user.partition(":")
    if not sep:
        password = getpass.getpass(f"Password for {name}: ")
    return name, password


_OPTIONS: list[Callable[[Any], Any]] = [
    click.option(
        "--url",
        envvar="CONNECTRT_URL",
        show_envvar=True,
        metavar="URL",
        help=f"Worker REST URL [default: the context's, else {DEFAULT_URL}]",
    ),
    click.option(
        "--user",
        envvar="CONNECTRT_USER",
        show_envvar=True,
        metavar="USER[:PASS]",
        help="HTTP Basic credentials; without ':PASS' the password is asked for",
    ),
    click.option(
        "--token",
        envvar="CONNECTRT_TOKEN",
        show_envvar=True,
        metavar="TOKEN",
        help="Bearer token to send",
    ),
    click.option("--insecure", is_flag=True, help="Do not verify the worker's TLS certificate"),
    click.option(
        "--cacert",
        metavar="FILE",
        help="CA bundle to verify the worker's TLS certificate with",
    ),
    click.option(
        "--timeout",
        type=float,
        default=30.0,
        show_default=True,
        metavar="SECONDS",
        help="Request timeout in seconds",
    ),
    click.option(
        "--context",
        "context_name",
        envvar="CONNECTRT_CONTEXT",
        show_envvar=True,
        metavar="NAME",
        help="Use this saved context instead of the current one (see 'connectrt context')",
    ),
    click.option("--json", "as_json", is_flag=True, help="Print the server's JSON answer as is"),
]


def connection_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Decorator: adds the connection options and passes ``connection=Connection(...)``."""

    @functools.wraps(command)
    def wrapper(
        *args: Any,
        url: str | None,
        user: str | None,
        token: str | None,
        insecure: bool,
        cacert: str | None,
        timeout: float,
        context_name: str | None,
        as_json: bool,
        **kwargs: Any,
    ) -> Any:
        connection = Connection(url, user, token, insecure, cacert, timeout, context_name, as_json)
        return command(*args, connection=connection, **kwargs)

    for option in reversed(_OPTIONS):
        wrapper = option(wrapper)
    return wrapper


def complete_connector(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[click.shell_completion.CompletionItem]:
    """Shell completion of a connector name: asks the worker of the command's (or the current)
    context, briefly; nothing when it does not answer."""
    from connectrt.client import ConnectClient

    params = ctx.params
    try:
        saved = ContextStore().resolve(params.get("context_name"))
        url = (
            params.get("url")
            or os.environ.get("CONNECTRT_URL")
            or (saved.url if saved else None)
            or DEFAULT_URL
        )
        token = params.get("token") or (saved.token if saved else None)
        user = params.get("user") or (saved.user if saved else None) or ""
        name, sep, password = user.partition(":")
        auth = (name, password) if sep else None  # never prompt while completing
        with ConnectClient(url, auth=auth, token=token or None, timeout=2.0) as client:
            names = client.connectors()
    except Exception:
        return []
    return [click.shell_completion.CompletionItem(n) for n in names if n.startswith(incomplete)]
