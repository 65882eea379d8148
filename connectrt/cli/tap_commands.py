"""``connectrt tap CONNECTOR``: print a sample of a running connector's records as they pass
one stage (``GET /connectors/NAME/tap``, server-sent events).

``--stage`` is ``read``, ``converted``, ``transform:<index or alias>`` or ``written`` (default
``read``); ``--rate`` records a second (the worker caps it at 20); ``--task`` one task only;
``--limit N`` ends after N records (else Ctrl-C ends it, with exit status 0). Each record is
printed as one line of JSON on standard output (as the worker renders it: bytes as base64 with
their UTF-8 text, secrets hidden); what the tap is and records dropped because the terminal
lagged go to standard error, so a pipe (``| jq``) gets records only. ``--json`` prints every
event, the ``tap`` and ``dropped`` ones included, as ``{"event": ..., "data": ...}`` lines.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

import click

from connectrt.cli.completion import complete_connector_names
from connectrt.cli.remote import remote

if TYPE_CHECKING:
    from connectrt.client import ConnectClient

__all__ = ["tap_command"]


@click.command("tap", short_help="Watch a sample of a connector's records, live.")
@remote
@click.argument("connector", shell_complete=complete_connector_names)
@click.option(
    "--stage",
    default="read",
    show_default=True,
    metavar="STAGE",
    help="read, converted, transform:<index or alias>, or written.",
)
@click.option("--rate", type=float, metavar="N", help="Records a second (default 1, at most 20).")
@click.option("--task", type=int, metavar="N", help="Only this task (default: every task).")
@click.option("--limit", type=int, metavar="N", help="Stop after N records.")
def tap_command(
    c: ConnectClient,
    as_json: bool,
    connector: str,
    stage: str,
    rate: float | None,
    task: int | None,
    limit: int | None,
) -> int:
    """Watch a sample of a connector's records after one stage, live.

    CONNECTOR is the connector's name; its tasks must run on the worker asked
    (task.executor=threads). Records print as JSON lines on standard output.
    """
    try:
        for event, data in c.tap(connector, stage, rate, task, limit):
            if as_json:
                click.echo(json.dumps({"event": event, "data": data}))
            elif event == "record":
                click.echo(json.dumps(data, ensure_ascii=False))
            elif event == "tap":
                click.echo(
                    f"# {data['connector']}: stage {data['stage']} "
                    f"(stages: {', '.join(data['stages'])}), at most {data['rate']:g} records/s",
                    err=True,
                )
            elif event == "dropped":
                click.echo(f"# {data['dropped']} records dropped so far (the tap lagged)", err=True)
            sys.stdout.flush()
    except KeyboardInterrupt:
        return 0
    return 0
