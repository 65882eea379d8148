"""``connectrt offsets reset``: stop a connector, move its offsets, resume it (over REST).

The target is ``--to-earliest``, ``--to-latest``, ``--to-datetime T`` (sinks: the first offsets
at or after ISO-8601 time T) or ``--to-offset N``, optionally for one ``--topic`` (sinks).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

import click

from connectrt.cli.completion import complete_connector_names
from connectrt.cli.groups import OrderedGroup
from connectrt.cli.output import print_json, print_offsets
from connectrt.cli.remote import remote
from connectrt.errors import ConfigError

if TYPE_CHECKING:
    from connectrt.client import ConnectClient

__all__ = ["offsets"]


@click.group("offsets", cls=OrderedGroup)
def offsets() -> None:
    """Move a connector's offsets (rewind or fast-forward)."""


@offsets.command("reset")
@remote
@click.argument("name", shell_complete=complete_connector_names)
@click.option("--to-earliest", is_flag=True, help="Move to the earliest retained offsets.")
@click.option("--to-latest", is_flag=True, help="Move to the end of the topics.")
@click.option(
    "--to-datetime",
    metavar="T",
    help="Move to the first offsets at or after ISO-8601 time T (sinks).",
)
@click.option("--to-offset", type=int, metavar="N", help="Move to offset N in every partition.")
@click.option("--topic", metavar="TOPIC", help="Only this topic's partitions (sinks).")
def _reset(
    c: ConnectClient,
    as_json: bool,
    name: str,
    to_earliest: bool,
    to_latest: bool,
    to_datetime: str | None,
    to_offset: int | None,
    topic: str | None,
) -> int:
    """Stop connector NAME, move its offsets, resume it.

    Exactly one of --to-earliest, --to-latest, --to-datetime and --to-offset. Calls POST
    /connectors/NAME/offsets/reset.
    """
    targets = [to_earliest, to_latest, to_datetime is not None, to_offset is not None]
    if sum(targets) != 1:
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
    moved = c.rewind(name, to, timestamp, to_offset, topic)
    if as_json:
        print_json({"offsets": moved})
        return 0
    target = {"timestamp": to_datetime, "offset": f"offset {to_offset}"}.get(to, to)
    print(f"Reset connector {name} to {target}")
    if moved:
        print_offsets(name, moved)
    return 0
