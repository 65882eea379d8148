"""``connectrt connectors ...``: list, show, create, update, delete, pause, resume, stop and
restart connectors, and show their status, task configs and offsets, over a worker's REST API.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from connectrt.cli.output import print_json, print_offsets, print_status, print_table
from connectrt.cli.remote import Handler, add_remote_command
from connectrt.errors import ConfigError

if TYPE_CHECKING:
    from connectrt.client import ConnectClient

__all__ = ["add_connector_commands"]


def add_connector_commands(subparsers: Any, common: argparse.ArgumentParser) -> None:
    """Add ``connectors`` and its actions to the ``connectrt`` parser's subcommands."""

    def leaf(group: Any, name: str, handler: Handler, help: str) -> argparse.ArgumentParser:
        return add_remote_command(group, name, handler, help, common)

    conn = subparsers.add_parser("connectors", help="manage connectors on a running worker")
    cs = conn.add_subparsers(dest="action", required=True, metavar="ACTION")
    leaf(cs, "list", _list, "list connectors with their type, state and tasks")
    leaf(cs, "get", _get, "show a connector's type, tasks and config").add_argument("name")
    p = leaf(cs, "create", _create, "create a connector from a file")
    p.add_argument(
        "-f",
        "--file",
        required=True,
        help=".properties, JSON config map, or JSON {name, config, initial_state}",
    )
    p.add_argument(
        "--initial-state",
        choices=["RUNNING", "PAUSED", "STOPPED"],
        default=None,
        help="overrides the file's initial_state",
    )
    p = leaf(cs, "update", _update, "replace a connector's config (created if missing)")
    p.add_argument("name")
    p.add_argument("-f", "--file", required=True, help=".properties or JSON config file")
    leaf(cs, "delete", _delete, "delete a connector").add_argument("name")
    leaf(cs, "status", _status, "connector and task states").add_argument("name")
    leaf(cs, "pause", _pause, "pause a connector and its tasks").add_argument("name")
    leaf(cs, "resume", _resume, "resume a paused or stopped connector").add_argument("name")
    leaf(cs, "stop", _stop, "stop a connector (shuts its tasks down)").add_argument("name")
    p = leaf(cs, "restart", _restart, "restart a connector (and tasks)")
    p.add_argument("name")
    p.add_argument("--include-tasks", action="store_true", help="restart its tasks too")
    p.add_argument("--only-failed", action="store_true", help="restart only FAILED instances")
    leaf(cs, "tasks", _tasks, "task configs").add_argument("name")
    leaf(cs, "offsets", _offsets, "committed offsets (KIP-875)").add_argument("name")


def _list(c: ConnectClient, args: argparse.Namespace) -> int:
    listing = c.connectors(expand=("status", "info"))
    if args.json:
        print_json(listing)
        return 0
    rows = [["NAME", "TYPE", "STATE", "TASKS"]]
    for name in sorted(listing):
        entry = listing[name]
        status = entry.get("status") or {}
        info = entry.get("info") or {}
        tasks = status.get("tasks") or []
        running = sum(1 for t in tasks if t.get("state") == "RUNNING")
        failed = sum(1 for t in tasks if t.get("state") == "FAILED")
        summary = f"{running}/{len(tasks)} running" + (f", {failed} failed" if failed else "")
        rows.append(
            [
                name,
                str(info.get("type") or status.get("type") or "unknown"),
                str((status.get("connector") or {}).get("state", "UNKNOWN")),
                summary,
            ]
        )
    print_table(rows)
    return 0


def _get(c: ConnectClient, args: argparse.Namespace) -> int:
    info = c.connector(args.name)
    if args.json:
        print_json(info)
        return 0
    print(f"Name:   {info['name']}")
    print(f"Type:   {info['type']}")
    print(f"Tasks:  {len(info['tasks'])}")
    print("Config:")
    for key in sorted(info["config"]):
        print(f"  {key} = {info['config'][key]}")
    return 0


def _create(c: ConnectClient, args: argparse.Namespace) -> int:
    from connectrt.runtime.properties import load_connector_file

    name, config, initial_state = load_connector_file(args.file)
    info = c.create(name, config, args.initial_state or initial_state)
    if args.json:
        print_json(info)
    else:
        print(f"Created connector {info['name']} ({info['type']})")
    return 0


def _update(c: ConnectClient, args: argparse.Namespace) -> int:
    config = _load_config_for(args.name, args.file)
    existed = args.name in c.connectors()
    info = c.put_config(args.name, config)
    if args.json:
        print_json(info)
    else:
        print(f"{'Updated' if existed else 'Created'} connector {info['name']} ({info['type']})")
    return 0


def _load_config_for(name: str, path: str) -> dict[str, str]:
    """A connector file's config, for connector ``name``: the file may leave the name out,
    but if it names a connector, that must be ``name``."""
    from connectrt.runtime.properties import _str, load_connector_file, parse_properties

    try:
        file_name, config, _ = load_connector_file(path)
    except ConfigError as e:
        if e.name != "name" or "has no 'name'" not in str(e):
            raise
        # The same parsing, for a file without a name (that is given on the command line).
        raw = Path(path).read_bytes()
        if raw.lstrip().startswith(b"{"):
            doc = json.loads(raw)
            values = doc["config"] if isinstance(doc.get("config"), dict) else doc
            config = {k: _str(v) for k, v in values.items()}
        else:
            config = parse_properties(raw.decode("utf-8"))
        file_name = name
    if file_name != name:
        raise ConfigError(f"{path} configures connector '{file_name}', not '{name}'", "name")
    config["name"] = name
    return config


def _delete(c: ConnectClient, args: argparse.Namespace) -> int:
    c.delete(args.name)
    if not args.json:
        print(f"Deleted connector {args.name}")
    return 0


def _status(c: ConnectClient, args: argparse.Namespace) -> int:
    status = c.status(args.name)
    if args.json:
        print_json(status)
        return 0
    print_status(status)
    return 0


def _pause(c: ConnectClient, args: argparse.Namespace) -> int:
    c.pause(args.name)
    if not args.json:
        print(f"Pausing connector {args.name}")
    return 0


def _resume(c: ConnectClient, args: argparse.Namespace) -> int:
    c.resume(args.name)
    if not args.json:
        print(f"Resuming connector {args.name}")
    return 0


def _stop(c: ConnectClient, args: argparse.Namespace) -> int:
    c.stop(args.name)
    if not args.json:
        print(f"Stopped connector {args.name}")
    return 0


def _restart(c: ConnectClient, args: argparse.Namespace) -> int:
    plan = c.restart(args.name, args.include_tasks, args.only_failed)
    if args.json:
        if plan is not None:
            print_json(plan)
        return 0
    if plan is None:
        print(f"Restarted connector {args.name}")
    else:
        print_status(plan)
    return 0


def _tasks(c: ConnectClient, args: argparse.Namespace) -> int:
    tasks = c.tasks(args.name)
    if args.json:
        print_json(tasks)
        return 0
    if not tasks:
        print(f"Connector {args.name} has no tasks")
    for task in tasks:
        print(f"task {task['id']['task']}:")
        for key in sorted(task["config"]):
            print(f"  {key} = {task['config'][key]}")
    return 0


def _offsets(c: ConnectClient, args: argparse.Namespace) -> int:
    offsets = c.offsets(args.name)
    if args.json:
        print_json({"offsets": offsets})
        return 0
    print_offsets(args.name, offsets)
    return 0
