"""``connectrt auth hash-password [USER]`` and ``connectrt auth hash-token``: the lines of a
worker's ``rest.auth.credentials.file`` and ``rest.auth.tokens.file``.

The secret is the first line of stdin, or asked for on a terminal (a password twice). These
commands work offline: they do not talk to a worker.
"""

from __future__ import annotations

import getpass
import sys

import click

from connectrt.errors import ConfigError

__all__ = ["auth"]


@click.group(help="Make entries for the REST credentials files (offline).")
def auth() -> None:
    pass


def _read_secret(prompt: str, confirm: bool) -> str:
    if not sys.stdin.isatty():
        return sys.stdin.readline().rstrip("\r\n")
    secret = getpass.getpass(f"{prompt}: ")
    if confirm and getpass.getpass(f"{prompt} (again): ") != secret:
        raise ConfigError(f"The two {prompt.lower()}s differ")
    return secret


@auth.command(
    "hash-password",
    help="Print 'USER:pbkdf2_sha256$...' for rest.auth.credentials.file (the bare hash without "
    "USER). Reads the password from stdin (first line) or asks for it twice.",
)
@click.argument("user", required=False)
@click.option(
    "--iterations",
    type=int,
    default=None,
    help="PBKDF2 iterations [default: 200000]",
)
def hash_password_command(user: str | None, iterations: int | None) -> int:
    from connectrt.listener.auth import hash_password

    if user is not None and (":" in user or not user.strip()):
        raise ConfigError(f"Invalid user name {user!r}: it must be non-empty, without ':'")
    if iterations is not None and iterations < 1:
        raise ConfigError("--iterations must be positive")
    password = _read_secret("Password", confirm=True)
    if not password:
        raise ConfigError("Empty password")
    hashed = hash_password(password) if iterations is None else hash_password(password, iterations)
    print(f"{user}:{hashed}" if user is not None else hashed)
    return 0


@auth.command(
    "hash-token",
    help="Print 'sha256:...' for rest.auth.tokens.file. Reads the token from stdin (first "
    "line) or asks for it.",
)
def hash_token_command() -> int:
    from connectrt.listener.auth import hash_token

    token = _read_secret("Token", confirm=False).strip()
    if not token:
        raise ConfigError("Empty token")
    print(hash_token(token))
    return 0
