"""``connectrt dlq replay | status | cancel``: a connector's dead letter queue replay, over REST.

``replay --connector NAME [--from T] [--to T] [--dry-run] [--max-replays N]`` starts a run
(``POST /connectors/NAME/dlq/replay``) and, unless ``--no-wait``, follows it until it ends,
then prints its counts; exit status 0 when it COMPLETED, 1 when it FAILED or was CANCELLED
(or the server refused it). T is ISO-8601 or epoch milliseconds, checked by the worker.
``status`` prints the latest run, ``cancel`` stops the running one.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING, Any

from connectrt.cli.output import fail, print_json, print_table
from connectrt.cli.remote import add_remote_command

if TYPE_CHECKING:
    from connectrt.client import ConnectClient

__all__ = ["add_dlq_commands"]

_ACTIVE = ("RUNNING", "AWAITING_SINK")
_POLL_S = 0.5


def add_dlq_commands(subparsers: Any, common: argparse.ArgumentParser) -> None:
    """Add ``dlq`` and its actions to the ``connectrt`` parser's subcommands."""
    dlq = subparsers.add_parser("dlq", help="replay a connector's dead letter queue")
    actions = dlq.add_subparsers(dest="action", required=True, metavar="ACTION")

    p = add_remote_command(
        actions, "replay", _replay, "re-deliver the dead letter queue's records", common
    )
    p.add_argument("--connector", required=True, metavar="NAME")
    p.add_argument("--from", dest="from_", metavar="T", help="records at/after T (ISO-8601/ms)")
    p.add_argument("--to", metavar="T", help="records before T (ISO-8601 or epoch ms)")
    p.add_argument(
        "--dry-run", action="store_true", help="count what would be replayed; change nothing"
    )
    p.add_argument(
        "--max-replays",
        type=int,
        metavar="N",
        help="skip records already replayed N times",
    )
    p.add_argument("--no-wait", action="store_true", help="start the run and return")
    p.add_argument(
        "--wait-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="stop following the run after this long (default: until it ends)",
    )

    p = add_remote_command(actions, "status", _status, "the latest replay's progress", common)
    p.add_argument("--connector", required=True, metavar="NAME")

    p = add_remote_command(actions, "cancel", _cancel, "cancel the running replay", common)
    p.add_argument("--connector", required=True, metavar="NAME")


def _replay(c: ConnectClient, args: argparse.Namespace) -> int:
    status = c.dlq_replay(args.connector, args.from_, args.to, args.dry_run, args.max_replays)
    if not args.no_wait:
        status = _follow(c, args.connector, status, args.wait_timeout)
    return _report(status, args.json, waited=not args.no_wait)


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


def _report(status: dict[str, Any], as_json: bool, waited: bool) -> int:
    if as_json:
        print_json(status)
    else:
        print_replay(status)
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


def _status(c: ConnectClient, args: argparse.Namespace) -> int:
    status = c.dlq_replay_status(args.connector)
    if args.json:
        print_json(status)
    else:
        print_replay(status)
    return 0


def _cancel(c: ConnectClient, args: argparse.Namespace) -> int:
    status = c.cancel_dlq_replay(args.connector)
    if args.json:
        print_json(status)
    else:
        print(f"Cancelling replay {status['id']} of connector {args.connector}")
    return 0
