"""``connectrt connectors ...``: list, show, create, update, validate, delete, pause, resume,
stop and restart connectors, and show their status, task configs and offsets, over a worker's
REST API (one REST call per command, named in each command's help).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from connectrt.cli.completion import complete_connector_names
from connectrt.cli.groups import OrderedGroup
from connectrt.cli.output import fail, print_json, print_offsets, print_status, print_table
from connectrt.cli.remote import remote
from connectrt.errors import ConfigError

if TYPE_CHECKING:
    from connectrt.client import ConnectClient

__all__ = ["connectors"]

_FILE_HELP = "Connector config: .properties, a JSON config map, or a JSON {name, config} request."


def _name_argument() -> Any:
    return click.argument("name", shell_complete=complete_connector_names)


def _file_option(help: str = _FILE_HELP) -> Any:
    return click.option(
        "-f", "--file", "path", required=True, type=click.Path(dir_okay=False), help=help
    )


@click.group("connectors", cls=OrderedGroup)
def connectors() -> None:
    """Manage the connectors of a running worker (its REST API)."""


@connectors.command("list")
@remote
def _list(c: ConnectClient, as_json: bool) -> int:
    """List connectors with their type, state and tasks.

    Calls GET /connectors?expand=status&expand=info.
    """
    listing = c.connectors(expand=("status", "info"))
    if as_json:
        print_json(listing)
        return 0
    rows = []
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
    print_table(rows, header=["NAME", "TYPE", "STATE", "TASKS"])
    return 0


@connectors.command("get")
@remote
@_name_argument()
def _get(c: ConnectClient, as_json: bool, name: str) -> int:
    """Show connector NAME's type, tasks and config.

    Calls GET /connectors/NAME.
    """
    info = c.connector(name)
    if as_json:
        print_json(info)
        return 0
    print(f"Name:   {info['name']}")
    print(f"Type:   {info['type']}")
    print(f"Tasks:  {len(info['tasks'])}")
    print("Config:")
    for key in sorted(info["config"]):
        print(f"  {key} = {info['config'][key]}")
    return 0


@connectors.command("create")
@remote
@_file_option()
@click.option(
    "--initial-state",
    type=click.Choice(["RUNNING", "PAUSED", "STOPPED"]),
    default=None,
    help="The state the connector starts in; overrides the file's initial_state.",
)
def _create(c: ConnectClient, as_json: bool, path: str, initial_state: str | None) -> int:
    """Create a connector from a file that names it.

    Calls POST /connectors.
    """
    from connectrt.runtime.properties import load_connector_file

    name, config, file_state = load_connector_file(path)
    info = c.create(name, config, initial_state or file_state)
    if as_json:
        print_json(info)
    else:
        print(f"Created connector {info['name']} ({info['type']})")
    return 0


@connectors.command("update")
@remote
@_name_argument()
@_file_option("Connector config: .properties or JSON; may leave the name out.")
def _update(c: ConnectClient, as_json: bool, name: str, path: str) -> int:
    """Replace connector NAME's config; it is created if missing.

    Calls PUT /connectors/NAME/config.
    """
    config = _load_config_for(name, path)
    existed = name in c.connectors()
    info = c.put_config(name, config)
    if as_json:
        print_json(info)
    else:
        print(f"{'Updated' if existed else 'Created'} connector {info['name']} ({info['type']})")
    return 0


@connectors.command("validate")
@remote
@_file_option()
def _validate(c: ConnectClient, as_json: bool, path: str) -> int:
    """Check a connector config file without creating anything.

    Prints each field in error with the worker's message; exits with status 1 when the
    config is invalid, 0 when it is valid.

    Calls PUT /connector-plugins/CLASS/config/validate, CLASS being the file's
    connector.class.
    """
    _, config = _read_config(path)
    plugin = config.get("connector.class")
    if not plugin:
        raise ConfigError(f"{path} has no connector.class: there is nothing to validate it against")
    answer = c.validate(plugin, config)
    errors = [
        (entry["value"]["name"], entry["value"].get("value"), entry["value"].get("errors") or [])
        for entry in answer.get("configs", [])
        if entry.get("value", {}).get("errors")
    ]
    count = int(answer.get("error_count", len(errors)))
    if as_json:
        print_json(answer)
    elif count == 0:
        print(f"{path}: valid config for {answer.get('name', plugin)}")
    else:
        rows = [
            [key, "(not set)" if value is None else str(value), message]
            for key, value, messages in errors
            for message in messages
        ]
        print_table(rows, header=["FIELD", "VALUE", "ERROR"])
    if count:
        return fail(f"{path}: {count} invalid field{'s' if count != 1 else ''} for {plugin}")
    return 0


def _read_config(path: str) -> tuple[str | None, dict[str, str]]:
    """A connector file's name (None if it has none) and config."""
    from connectrt.runtime.properties import _str, load_connector_file, parse_properties

    try:
        name, config, _ = load_connector_file(path)
        return name, config
    except ConfigError as e:
        if e.name != "name" or "has no 'name'" not in str(e):
            raise
    # The same parsing, for a file without a name.
    raw = Path(path).read_bytes()
    if raw.lstrip().startswith(b"{"):
        doc = json.loads(raw)
        values = doc["config"] if isinstance(doc.get("config"), dict) else doc
        return None, {k: _str(v) for k, v in values.items()}
    return None, parse_properties(raw.decode("utf-8"))


def _load_config_for(name: str, path: str) -> dict[str, str]:
    """A connector file's config, for connector ``name``: the file may leave the name out,
    but if it names a connector, that must be ``name``."""
    file_name, config = _read_config(path)
    if file_name is not None and file_name != name:
        raise ConfigError(f"{path} configures connector '{file_name}', not '{name}'", "name")
    config["name"] = name
    return config


@connectors.command("delete")
@remote
@_name_argument()
def _delete(c: ConnectClient, as_json: bool, name: str) -> int:
    """Delete connector NAME.

    Calls DELETE /connectors/NAME.
    """
    c.delete(name)
    if not as_json:
        print(f"Deleted connector {name}")
    return 0


@connectors.command("status")
@remote
@_name_argument()
def _status(c: ConnectClient, as_json: bool, name: str) -> int:
    """Show connector NAME's and its tasks' states.

    Calls GET /connectors/NAME/status.
    """
    status = c.status(name)
    if as_json:
        print_json(status)
        return 0
    print_status(status)
    return 0


@connectors.command("pause")
@remote
@_name_argument()
def _pause(c: ConnectClient, as_json: bool, name: str) -> int:
    """Pause connector NAME and its tasks.

    Calls PUT /connectors/NAME/pause.
    """
    c.pause(name)
    if not as_json:
        print(f"Pausing connector {name}")
    return 0


@connectors.command("resume")
@remote
@_name_argument()
def _resume(c: ConnectClient, as_json: bool, name: str) -> int:
    """Resume a paused or stopped connector NAME.

    Calls PUT /connectors/NAME/resume.
    """
    c.resume(name)
    if not as_json:
        print(f"Resuming connector {name}")
    return 0


@connectors.command("stop")
@remote
@_name_argument()
def _stop(c: ConnectClient, as_json: bool, name: str) -> int:
    """Stop connector NAME, shutting its tasks down.

    Calls PUT /connectors/NAME/stop.
    """
    c.stop(name)
    if not as_json:
        print(f"Stopped connector {name}")
    return 0


@connectors.command("restart")
@remote
@_name_argument()
@click.option("--include-tasks", is_flag=True, help="Restart the connector's tasks too.")
@click.option("--only-failed", is_flag=True, help="Restart only the FAILED instances.")
def _restart(
    c: ConnectClient, as_json: bool, name: str, include_tasks: bool, only_failed: bool
) -> int:
    """Restart connector NAME, and its tasks if asked.

    Calls POST /connectors/NAME/restart.
    """
    plan = c.restart(name, include_tasks, only_failed)
    if as_json:
        if plan is not None:
            print_json(plan)
        return 0
    if plan is None:
        print(f"Restarted connector {name}")
    else:
        print_status(plan)
    return 0


@connectors.command("tasks")
@remote
@_name_argument()
def _tasks(c: ConnectClient, as_json: bool, name: str) -> int:
    """Show the configs of connector NAME's tasks.

    Calls GET /connectors/NAME/tasks.
    """
    tasks = c.tasks(name)
    if as_json:
        print_json(tasks)
        return 0
    if not tasks:
        print(f"Connector {name} has no tasks")
    for task in tasks:
        print(f"task {task['id']['task']}:")
        for key in sorted(task["config"]):
            print(f"  {key} = {task['config'][key]}")
    return 0


@connectors.command("offsets")
@remote
@_name_argument()
def _offsets(c: ConnectClient, as_json: bool, name: str) -> int:
    """Show connector NAME's committed offsets (KIP-875).

    Calls GET /connectors/NAME/offsets.
    """
    offsets = c.offsets(name)
    if as_json:
        print_json({"offsets": offsets})
        return 0
    print_offsets(name, offsets)
    return 0
