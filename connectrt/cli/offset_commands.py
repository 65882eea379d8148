"""``connectrt offsets reset``: stop a connector, move its offsets, resume it (over REST).

The target is ``--to-earliest``, ``--to-latest``, ``--to-datetime T`` (sinks: the first offsets
at or after ISO-8601 time T) or ``--to-offset N``, optionally for one ``--topic`` (sinks).
"""

from __future__ import annotations

import argparse
from datetime import datetime
from typing import TYPE_CHECKING, Any

from connectrt.cli.output import print_json, print_offsets
from connectrt.cli.remote import add_remote_command
from connectrt.errors import ConfigError

if TYPE_CHECKING:
    from connectrt.client import ConnectClient

__all__ = ["add_offset_commands"]


def add_offset_commands(subparsers: Any, common: argparse.ArgumentParser) -> None:
    """Add ``offsets`` and its actions to the ``connectrt`` parser's subcommands."""
    off = subparsers.add_parser("offsets", help="move a connector's offsets")
    os_ = off.add_subparsers(dest="action", required=True, metavar="ACTION")
    p = add_remote_command(
        os_, "reset", _reset, "rewind or fast-forward: stop, move offsets, resume", common
    )
    p.add_argument("name")
    to = p.add_mutually_exclusive_group(required=True)
    to.add_argument("--to-earliest", action="store_true", help="the earliest retained offsets")
    to.add_argument("--to-latest", action="store_true", help="the end of the topics")
    to.add_argument(
        "--to-datetime", metavar="T", help="the first offsets at/after ISO-8601 time T (sinks)"
    )
    to.add_argument("--to-offset", type=int, metavar="N", help="offset N in every partition")
    p.add_argument("--topic", default=None, help="only this topic (sinks)")


def _reset(c: ConnectClient, args: argparse.Namespace) -> int:
    timestamp = None
    if args.to_earliest:
        to = "earliest"
    elif args.to_latest:
        to = "latest"
    elif args.to_datetime is not None:
        to = "timestamp"
        try:
            timestamp = datetime.fromisoformat(args.to_datetime.replace("Z", "+00:00"))
        except ValueError:
            raise ConfigError(
                f"--to-datetime {args.to_datetime!r} is not an ISO-8601 date-time"
            ) from None
    else:
        to = "offset"
    offsets = c.rewind(args.name, to, timestamp, args.to_offset, args.topic)
    if args.json:
        print_json({"offsets": offsets})
        return 0
    target = {"timestamp": args.to_datetime, "offset": f"offset {args.to_offset}"}.get(to, to)
    print(f"Reset connector {args.name} to {target}")
    if offsets:
        print_offsets(args.name, offsets)
    return 0
