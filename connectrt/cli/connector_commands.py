"""``connectrt connectors ...``: list, show, validate, create, update, delete, pause, resume,
stop and restart connectors, and show their status, task configs and offsets, over a worker's
REST API.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from connectrt.cli.output import print_json, print_offsets, print_status, print_table
from connectrt.cli.remote import Connection, complete_connector, connection_options
from connectrt.errors import ConfigError

if TYPE_CHECKING:
    from connectrt.client import ConnectClient

__all__ = ["connectors"]

_FILE_HELP = (
    "Connector file: .properties, a JSON config map, or a JSON request "
    '{"name", "config", "initial_state"}'
)


def _name_argument(command: Any) -> Any:
    return click.argument("name", shell_complete=complete_connector)(command)


@click.group(help="Manage connectors on a running worker (its REST API).")
def connectors() -> None:
    pass


@connectors.command("list", help="List connectors with their type, state and tasks.")
@connection_options
def list_connectors(connection: Connection) -> int:
    def run(c: ConnectClient) -> int:
        listing = c.connectors(expand=("status", "info"))
        if connection.json:
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

    return connection.run(run)


@connectors.command(help="Show a connector's type, tasks and config (secrets hidden).")
@_name_argument
@connection_options
def get(name: str, connection: Connection) -> int:
    def run(c: ConnectClient) -> int:
        info = c.connector(name)
        if connection.json:
            print_json(info)
            return 0
        print(f"Name:   {info['name']}")
        print(f"Type:   {info['type']}")
        print(f"Tasks:  {len(info['tasks'])}")
        print("Config:")
        for key in sorted(info["config"]):
            print(f"  {key} = {info['config'][key]}")
        return 0

    return connection.run(run)


@connectors.command(
    help="Check a connector file against its plugin's config definition without creating "
    "anything (PUT /connector-plugins/CLASS/config/validate). Exits 1 when a value is invalid."
)
@click.option("-f", "--file", "path", required=True, metavar="FILE", help=_FILE_HELP)
@connection_options
def validate(path: str, connection: Connection) -> int:
    config = _load_any(path)
    plugin = config.get("connector.class", "").strip()
    if not plugin:
        raise ConfigError(f"{path} has no 'connector.class'", "connector.class")

    def run(c: ConnectClient) -> int:
        result = c.validate(plugin, config)
        if connection.json:
            print_json(result)
            return 1 if result.get("error_count") else 0
        errors = [
            (entry["value"]["name"], message)
            for entry in result.get("configs", [])
            for message in entry["value"].get("errors", [])
        ]
        if not errors:
            print(f"{path}: valid configuration for {result.get('name', plugin)}")
            return 0
        print_table([["KEY", "ERROR"], *([k, m] for k, m in sorted(errors))])
        count = len(errors)
        print(f"{path}: {count} invalid value{'s' if count != 1 else ''}")
        return 1

    return connection.run(run)


@connectors.command(help="Create a connector from a file (POST /connectors).")
@click.option("-f", "--file", "path", required=True, metavar="FILE", help=_FILE_HELP)
@click.option(
    "--initial-state",
    type=click.Choice(["RUNNING", "PAUSED", "STOPPED"]),
    default=None,
    help="State to create it in (KIP-980); overrides the file's initial_state",
)
@connection_options
def create(path: str, initial_state: str | None, connection: Connection) -> int:
    from connectrt.runtime.properties import load_connector_file

    name, config, file_state = load_connector_file(path)

    def run(c: ConnectClient) -> int:
        info = c.create(name, config, initial_state or file_state)
        if connection.json:
            print_json(info)
        else:
            print(f"Created connector {info['name']} ({info['type']})")
        return 0

    return connection.run(run)


@connectors.command(help="Replace a connector's config from a file (created if missing).")
@_name_argument
@click.option(
    "-f",
    "--file",
    "path",
    required=True,
    metavar="FILE",
    help=".properties or JSON config file; a name in it must be NAME",
)
@connection_options
def update(name: str, path: str, connection: Connection) -> int:
    config = _load_config_for(name, path)

    def run(c: ConnectClient) -> int:
        existed = name in c.connectors()
        info = c.put_config(name, config)
        if connection.json:
            print_json(info)
        else:
            print(
                f"{'Updated' if existed else 'Created'} connector {info['name']} ({info['type']})"
            )
        return 0

    return connection.run(run)


def _parse_config(path: str) -> dict[str, str]:
    """A connector file's config map, whether or not it names the connector."""
    from connectrt.runtime.properties import _str, parse_properties

    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"Connector config file not found: {path}") from None
    except OSError as e:
        raise ConfigError(f"Cannot read connector config file {path}: {e.strerror}") from None
    if raw.lstrip().startswith(b"{"):
        try:
            doc = json.loads(raw)
        except ValueError as e:
            raise ConfigError(f"Connector config file {path} is not valid JSON: {e}") from None
        values = doc["config"] if isinstance(doc.get("config"), dict) else doc
        return {k: _str(v) for k, v in values.items()}
    return parse_properties(raw.decode("utf-8"))


def _load_any(path: str) -> dict[str, str]:
    """A connector file's config (its name, when it has one, as ``name``)."""
    from connectrt.runtime.properties import load_connector_file

    try:
        name, config, _ = load_connector_file(path)
    except ConfigError as e:
        if e.name != "name" or "has no 'name'" not in str(e):
            raise
        return _parse_config(path)
    return {**config, "name": name}


def _load_config_for(name: str, path: str) -> dict[str, str]:
    """A connector file's config, for connector ``name``: the file may leave the name out,
    but if it names a connector, that must be ``name``."""
    from connectrt.runtime.properties import load_connector_file

    try:
        file_name, config, _ = load_connector_file(path)
    except ConfigError as e:
        if e.name != "name" or "has no 'name'" not in str(e):
            raise
        config, file_name = _parse_config(path), name
    if file_name != name:
        raise ConfigError(f"{path} configures connector '{file_name}', not '{name}'", "name")
    config["name"] = name
    return config


def _simple(verb: str, help: str, done: str) -> None:
    """A command ``verb NAME`` calling ``client.<verb>(name)`` and printing ``done``."""

    @connectors.command(verb, help=help)
    @_name_argument
    @connection_options
    def command(name: str, connection: Connection) -> int:
        def run(c: ConnectClient) -> int:
            getattr(c, verb)(name)
            if not connection.json:
                print(done.format(name=name))
            return 0

        return connection.run(run)


_simple("delete", "Delete a connector (its offsets stay).", "Deleted connector {name}")
_simple("pause", "Pause a connector and its tasks.", "Pausing connector {name}")
_simple("resume", "Resume a paused or stopped connector.", "Resuming connector {name}")
_simple("stop", "Stop a connector: shut its tasks down until resumed.", "Stopped connector {name}")


@connectors.command(help="Show the connector's and its tasks' states (and traces).")
@_name_argument
@connection_options
def status(name: str, connection: Connection) -> int:
    def run(c: ConnectClient) -> int:
        answer = c.status(name)
        if connection.json:
            print_json(answer)
        else:
            print_status(answer)
        return 0

    return connection.run(run)


@connectors.command(help="Restart a connector, and its tasks with --include-tasks (KIP-745).")
@_name_argument
@click.option("--include-tasks", is_flag=True, help="Restart its tasks too")
@click.option("--only-failed", is_flag=True, help="Restart only the FAILED instances")
@connection_options
def restart(name: str, include_tasks: bool, only_failed: bool, connection: Connection) -> int:
    def run(c: ConnectClient) -> int:
        plan = c.restart(name, include_tasks, only_failed)
        if connection.json:
            if plan is not None:
                print_json(plan)
            return 0
        if plan is None:
            print(f"Restarted connector {name}")
        else:
            print_status(plan)
        return 0

    return connection.run(run)


@connectors.command(help="Show the connector's task configs (secrets hidden).")
@_name_argument
@connection_options
def tasks(name: str, connection: Connection) -> int:
    def run(c: ConnectClient) -> int:
        answer = c.tasks(name)
        if connection.json:
            print_json(answer)
            return 0
        if not answer:
            print(f"Connector {name} has no tasks")
        for task in answer:
            print(f"task {task['id']['task']}:")
            for key in sorted(task["config"]):
                print(f"  {key} = {task['config'][key]}")
        return 0

    return connection.run(run)


@connectors.command(help="Show the connector's committed offsets (KIP-875).")
@_name_argument
@connection_options
def offsets(name: str, connection: Connection) -> int:
    def run(c: ConnectClient) -> int:
        answer = c.offsets(name)
        if connection.json:
            print_json({"offsets": answer})
        else:
            print_offsets(name, answer)
        return 0

    return connection.run(run)
