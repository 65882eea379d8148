"""``connectrt auth hash-password [USER]`` and ``connectrt auth hash-token``: the lines of a
worker's ``rest.auth.credentials.file`` and ``rest.auth.tokens.file``.

The secret is the first line of stdin, or asked for on a terminal (a password twice). These
commands work offline: they do not talk to a worker.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import Any

from connectrt.errors import ConfigError

__all__ = ["add_auth_commands"]


def add_auth_commands(subparsers: Any) -> None:
    """Add ``auth`` and its actions to the ``connectrt`` parser's subcommands."""
    auth = subparsers.add_parser("auth", help="make entries for the REST credentials files")
    au = auth.add_subparsers(dest="action", required=True, metavar="ACTION")
    p = au.add_parser(
        "hash-password",
        help="print 'USER:pbkdf2_sha256$...' for rest.auth.credentials.file",
        description="Reads the password from stdin (first line) or asks for it.",
    )
    p.add_argument("user", nargs="?", default=None)
    p.add_argument("--iterations", type=int, default=None, help="PBKDF2 iterations")
    p.set_defaults(func=_hash_password)
    p = au.add_parser(
        "hash-token",
        help="print 'sha256:...' for rest.auth.tokens.file",
        description="Reads the token from stdin (first line) or asks for it.",
    )
    p.set_defaults(func=_hash_token)


def _read_secret(prompt: str, confirm: bool) -> str:
    if not sys.stdin.isatty():
        return sys.stdin.readline().rstrip("\r\n")
    secret = getpass.getpass(f"{prompt}: ")
    if confirm and getpass.getpass(f"{prompt} (again): ") != secret:
        raise ConfigError(f"The two {prompt.lower()}s differ")
    return secret


def _hash_password(args: argparse.Namespace) -> int:
    from connectrt.listener.auth import hash_password

    if args.user is not None and (":" in args.user or not args.user.strip()):
        raise ConfigError(f"Invalid user name {args.user!r}: it must be non-empty, without ':'")
    if args.iterations is not None and args.iterations < 1:
        raise ConfigError("--iterations must be positive")
    password = _read_secret("Password", confirm=True)
    if not password:
        raise ConfigError("Empty password")
    if args.iterations is None:
        hashed = hash_password(password)
    else:
        hashed = hash_password(password, args.iterations)
    print(f"{args.user}:{hashed}" if args.user is not None else hashed)
    return 0


def _hash_token(args: argparse.Namespace) -> int:
    from connectrt.listener.auth import hash_token

    token = _read_secret("Token", confirm=False).strip()
    if not token:
        raise ConfigError("Empty token")
    print(hash_token(token))
    return 0
