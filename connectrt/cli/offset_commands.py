"""``connectrt offsets reset``: stop a connector, move its offsets, resume it (over REST).

The target is ``--to-earliest``, ``--to-latest``, ``--to-datetime T`` (sinks: the first offsets
at or after ISO-8601 time T) or ``--to-offset N``, optionally for one ``--topic`` (sinks).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

import click

from connectrt.cli.output import print_json, print_offsets
from connectrt.cli.remote import Connection, complete_connector, connection_options
from connectrt.errors import ConfigError

if TYPE_CHECKING:
    from connectrt.client import ConnectClient

__all__ = ["offsets"]


@click.group(help="Move a connector's offsets.")
def offsets() -> None:
    pass


@offsets.command(
    help="Rewind or fast-forward NAME: stop it, move its offsets, resume it if it was running "
    "(POST /connectors/NAME/offsets/reset). Give exactly one --to-... target."
)
@click.argument("name", shell_complete=complete_connector)
@click.option("--to-earliest", is_flag=True, help="The earliest retained offsets")
@click.option("--to-latest", is_flag=True, help="The end of the topics (sinks)")
@click.option(
    "--to-datetime", metavar="T", help="The first offsets at/after ISO-8601 time T (sinks)"
)
@click.option("--to-offset", type=int, metavar="N", help="Offset N in every partition (sinks)")
@click.option("--topic", default=None, help="Only this topic (sinks)")
@connection_options
def reset(
    name: str,
    to_earliest: bool,
    to_latest: bool,
    to_datetime: str | None,
    to_offset: int | None,
    topic: str | None,
    connection: Connection,
) -> int:
    chosen = [to_earliest, to_latest, to_datetime is not None, to_offset is not None]
    if sum(chosen) != 1:
        raise click.UsageError(
            "give exactly one of --to-earliest, --to-latest, --to-datetime, --to-offset"
        )
    timestamp = None
    if to_earliest:
        to = "earliest"
    elif to_latest:
        to = "latest"
    elif to_datetime is not None:
        to = "timestamp"
        try:
            timestamp = datetime.fromisoformat(to_datetime.replace("Z", "+00:00"))
        except ValueError:
            raise ConfigError(
                f"--to-datetime {to_datetime!r} is not an ISO-8601 date-time"
            ) from None
    else:
        to = "offset"

    def run(c: ConnectClient) -> int:
        moved = c.rewind(name, to, timestamp, to_offset, topic)
        if connection.json:
            print_json({"offsets": moved})
            return 0
        target = {"timestamp": to_datetime, "offset": f"offset {to_offset}"}.get(to, to)
        print(f"Reset connector {name} to {target}")
        if moved:
            print_offsets(name, moved)
        return 0

    return connection.run(run)
