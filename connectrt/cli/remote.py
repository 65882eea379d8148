"""Running a management command against a worker's REST API.

:func:`common_options` are the options every such command takes (``--url``, ``--user``,
``--token``, ``--insecure``/``--cacert``, ``--timeout``, ``--json``); :func:`add_remote_command`
adds a command whose handler gets a connected :class:`~connectrt.client.ConnectClient`. A server
error prints ``error: <message> (HTTP <status>)``, an unreachable worker
``error: cannot reach <url>: ...``; both exit with status 1.
"""

from __future__ import annotations

import argparse
import getpass
import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from connectrt.cli.output import fail

if TYPE_CHECKING:
    from connectrt.client import ConnectClient

__all__ = ["DEFAULT_URL", "Handler", "add_remote_command", "common_options", "remote"]

DEFAULT_URL = "http://localhost:8083"

Handler = Callable[["ConnectClient", argparse.Namespace], int]
"""``handler(client, args)``: runs one command against the worker; the exit status."""


def common_options() -> argparse.ArgumentParser:
    """The parent parser of every command that talks to a worker."""
    common = argparse.ArgumentParser(add_help=False)
    g = common.add_argument_group("worker connection")
    g.add_argument(
        "--url",
        default=None,
        help=f"worker REST URL (env CONNECTRT_URL, default {DEFAULT_URL})",
    )
    g.add_argument(
        "--user",
        default=None,
        metavar="USER:PASS",
        help="HTTP Basic credentials (env CONNECTRT_USER); without ':PASS' the password is asked",
    )
    g.add_argument("--token", default=None, help="bearer token (env CONNECTRT_TOKEN)")
    g.add_argument("--insecure", action="store_true", help="do not verify the TLS certificate")
    g.add_argument("--cacert", default=None, metavar="FILE", help="CA bundle to verify TLS")
    g.add_argument("--timeout", type=float, default=30.0, help="request timeout in seconds")
    g.add_argument("--json", action="store_true", help="print the raw JSON answer")
    return common


def add_remote_command(
    group: Any, name: str, handler: Handler, help: str, common: argparse.ArgumentParser
) -> argparse.ArgumentParser:
    """Add command ``name`` to ``group`` (a subparsers action), running ``handler`` remotely
    with the ``common`` options; returns its parser for the command's own arguments."""
    p: argparse.ArgumentParser = group.add_parser(name, help=help, parents=[common])
    p.set_defaults(func=remote(handler))
    return p


def remote(handler: Handler) -> Callable[[argparse.Namespace], int]:
    """The command function: connects as the options say, runs ``handler``, prints errors."""

    def run(args: argparse.Namespace) -> int:
        from connectrt.client import ClientError, ConnectClient, ConnectionFailed

        if str(getattr(args, "log_level", "INFO")).upper() != "DEBUG":
            logging.getLogger("httpx").setLevel(logging.WARNING)  # no INFO line per request
        url = args.url or os.environ.get("CONNECTRT_URL") or DEFAULT_URL
        if args.insecure and args.cacert:
            return fail("--insecure and --cacert cannot be used together")
        try:
            client = ConnectClient(
                url,
                auth=_credentials(args.user or os.environ.get("CONNECTRT_USER")),
                token=args.token or os.environ.get("CONNECTRT_TOKEN") or None,
                verify=False if args.insecure else (args.cacert or True),
                timeout=args.timeout,
            )
        except OSError as e:  # unreadable --cacert
            return fail(f"cannot use CA file {args.cacert}: {e.strerror or e}")
        try:
            with client:
                return handler(client, args)
        except ClientError as e:
            lines = e.message.splitlines() or [""]
            return fail(f"{lines[0]} (HTTP {e.status})", lines[1:])
        except ConnectionFailed as e:
            return fail(str(e))

    return run


def _credentials(user: str | None) -> tuple[str, str] | None:
    if not user:
        return None
    name, sep, password = user.partition(":")
    if not sep:
        password = getpass.getpass(f"Password for {name}: ")
    return name, password
