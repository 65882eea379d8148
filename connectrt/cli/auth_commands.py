"""``connectrt auth hash-password [USER]`` and ``connectrt auth hash-token``: the lines of a
worker's ``rest.auth.credentials.file`` and ``rest.auth.tokens.file``.

The secret is the first line of stdin, or asked for on a terminal (a password twice). These
commands work offline: they do not talk to a worker.
"""

from __future__ import annotations

import getpass
import sys

import click

from connectrt.cli.groups import OrderedGroup
from connectrt.cli.output import print_json
from connectrt.cli.remote import json_flag
from connectrt.errors import ConfigError

__all__ = ["auth"]


@click.group("auth", cls=OrderedGroup)
def auth() -> None:
    """Make entries for a worker's REST credentials files (offline)."""


def _read_secret(prompt: str, confirm: bool) -> str:
    if not sys.stdin.isatty():
        return sys.stdin.readline().rstrip("\r\n")
    secret = getpass.getpass(f"{prompt}: ")
    if confirm and getpass.getpass(f"{prompt} (again): ") != secret:
        raise ConfigError(f"The two {prompt.lower()}s differ")
    return secret


@auth.command("hash-password")
@click.argument("user", required=False)
@click.option("--iterations", type=int, metavar="N", help="PBKDF2 iterations (default 200000).")
@json_flag()
def _hash_password(user: str | None, iterations: int | None, as_json: bool) -> int:
    """Print 'USER:pbkdf2_sha256$...' for rest.auth.credentials.file.

    Reads the password from stdin (first line) or asks for it twice on a terminal. Without
    USER, prints the bare hash.
    """
    from connectrt.listener.auth import hash_password

    if user is not None and (":" in user or not user.strip()):
        raise ConfigError(f"Invalid user name {user!r}: it must be non-empty, without ':'")
    if iterations is not None and iterations < 1:
        raise ConfigError("--iterations must be positive")
    password = _read_secret("Password", confirm=True)
    if not password:
        raise ConfigError("Empty password")
    hashed = hash_password(password) if iterations is None else hash_password(password, iterations)
    line = f"{user}:{hashed}" if user is not None else hashed
    if as_json:
        print_json({"user": user, "hash": hashed, "line": line})
    else:
        print(line)
    return 0


@auth.command("hash-token")
@json_flag()
def _hash_token(as_json: bool) -> int:
    """Print 'sha256:...' for rest.auth.tokens.file.

    Reads the token from stdin (first line) or asks for it on a terminal.
    """
    from connectrt.listener.auth import hash_token

    token = _read_secret("Token", confirm=False).strip()
    if not token:
        raise ConfigError("Empty token")
    hashed = hash_token(token)
    if as_json:
        print_json({"hash": hashed})
    else:
        print(hashed)
    return 0
