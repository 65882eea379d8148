"""``connectrt dlq replay | status | cancel``: a connector's dead letter queue replay, over REST.

``replay --connector NAME [--from T] [--to T] [--dry-run] [--max-replays N]`` starts a run
(``POST /connectors/NAME/dlq/replay``) and, unless ``--no-wait``, follows it until it ends,
then prints its counts; exit status 0 when it COMPLETED, 1 when it FAILED or was CANCELLED
(or the server refused it). T is ISO-8601 or epoch milliseconds, checked by the worker.
``status`` prints the latest run, ``cancel`` stops the running one.
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any

import click

from connectrt.cli.completion import complete_connector_names
from connectrt.cli.groups import OrderedGroup
from connectrt.cli.output import fail, print_json, print_table
from connectrt.cli.remote import remote

if TYPE_CHECKING:
    from connectrt.client import ConnectClient

__all__ = ["dlq"]

_ACTIVE = ("RUNNING", "AWAITING_SINK")
_POLL_S = 0.5


def _connector_option() -> Any:
    return click.option(
        "--connector",
        required=True,
        metavar="NAME",
        shell_complete=complete_connector_names,
        help="The connector whose dead letter queue is replayed.",
    )


@click.group("dlq", cls=OrderedGroup)
def dlq() -> None:
    """Replay a connector's dead letter queue."""


@dlq.command("replay")
@remote
@_connector_option()
@click.option("--from", "from_", metavar="T", help="Only records at or after T (ISO-8601 or ms).")
@click.option("--to", metavar="T", help="Only records before T (ISO-8601 or epoch ms).")
@click.option("--dry-run", is_flag=True, help="Count what would be replayed; change nothing.")
@click.option("--max-replays", type=int, metavar="N", help="Skip records already replayed N times.")
@click.option("--no-wait", is_flag=True, help="Start the run and return at once.")
@click.option(
    "--wait-timeout",
    type=float,
    default=None,
    metavar="SECONDS",
    help="Stop following the run after this long (default: until it ends).",
)
def _replay(
    c: ConnectClient,
    as_json: bool,
    connector: str,
    from_: str | None,
    to: str | None,
    dry_run: bool,
    max_replays: int | None,
    no_wait: bool,
    wait_timeout: float | None,
) -> int:
    """Re-deliver the dead letter queue's records.

    Follows the run until it ends (unless --no-wait), then prints its counts; exits with
    status 1 when it FAILED or was CANCELLED.

    Calls POST /connectors/NAME/dlq/replay.
    """
    status = c.dlq_replay(connector, from_, to, dry_run, max_replays)
    if not no_wait:
        status = _follow(c, connector, status, wait_timeout)
    return _report(status, as_json, waited=not no_wait)


def _follow(
    c: ConnectClient, name: str, status: dict[str, Any], wait_timeout: float | None
) -> dict[str, Any]:
    """Poll the run until it ends (or ``wait_timeout``), showing progress on a terminal."""
    deadline = None if wait_timeout is None else time.monotonic() + wait_timeout
    shown = ""
    tty = sys.stderr.isatty()
    while status["state"] in _ACTIVE:
        if deadline is not None and time.monotonic() > deadline:
            break
        if tty:
            line = f"{status['state']}: {_counts_line(status)}"
            if line != shown:
                print(f"\r{line}\033[K", end="", file=sys.stderr, flush=True)
                shown = line
        time.sleep(_POLL_S)
        latest = c.dlq_replay_status(name)
        if latest["id"] != status["id"]:  # pragma: no cover - another run replaced ours
            break
        status = latest
    if shown:
        print(file=sys.stderr)
    return status


def _counts_line(status: dict[str, Any]) -> str:
    n = status["counts"]
    return (
        f"read {n['read']}, replayed {n['replayed']}, skipped {n['skipped']}, "
        f"failed again {n['failed_again']}"
    )


def _show(status: dict[str, Any], as_json: bool) -> None:
    """A run's status: as JSON, or as :func:`print_replay`'s lines."""
    if as_json:
        print_json(status)
    else:
        print_replay(status)


def _report(status: dict[str, Any], as_json: bool, waited: bool) -> int:
    _show(status, as_json)
    state = status["state"]
    if state in ("FAILED", "CANCELLED"):
        detail = f": {status['message']}" if status.get("message") else ""
        return fail(f"replay {status['id']} of connector {status['connector']} {state}{detail}")
    if waited and state in _ACTIVE:
        return fail(
            f"replay {status['id']} is still {state}; follow it with "
            f"'connectrt dlq status --connector {status['connector']}'"
        )
    return 0


def print_replay(status: dict[str, Any]) -> None:
    """A run's status as a few aligned lines."""
    n = status["counts"]
    kind = "dry run" if status["dry_run"] else "replay"
    print(
        f"{kind.capitalize()} {status['id']} of connector {status['connector']} "
        f"({status['type']}): {status['state']}"
    )
    window = "all records"
    if status.get("from") or status.get("to"):
        window = f"{status.get('from') or '(start)'} .. {status.get('to') or '(end)'}"
    reasons = ", ".join(f"{k} {v}" for k, v in sorted(status["skipped_reasons"].items()))
    rows = [
        ["  dead letter queue", f"{status['dlq_topic']} (group {status['group']})"],
        ["  window", window],
        ["  read", str(n["read"])],
        ["  would replay" if status["dry_run"] else "  replayed", str(n["replayed"])],
        ["  skipped", f"{n['skipped']} ({reasons})" if reasons else str(n["skipped"])],
        ["  failed again", str(n["failed_again"])],
    ]
    if status.get("sink_caught_up") is not None:
        rows.append(["  sink caught up", "yes" if status["sink_caught_up"] else "no"])
    if status.get("message"):
        rows.append(["  note", str(status["message"])])
    print_table(rows)


@dlq.command("status")
@remote
@_connector_option()
def _status(c: ConnectClient, as_json: bool, connector: str) -> int:
    """Show the latest replay's progress.

    Calls GET /connectors/NAME/dlq/replay.
    """
    _show(c.dlq_replay_status(connector), as_json)
    return 0


@dlq.command("cancel")
@remote
@_connector_option()
def _cancel(c: ConnectClient, as_json: bool, connector: str) -> int:
    """Cancel the running replay.

    Calls DELETE /connectors/NAME/dlq/replay.
    """
    status = c.cancel_dlq_replay(connector)
    if as_json:
        print_json(status)
    else:
        print(f"Cancelling replay {status['id']} of connector {connector}")
    return 0
