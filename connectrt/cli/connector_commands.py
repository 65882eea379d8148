"""``connectrt connectors ...``: list, show, create, update, validate, delete, pause, resume,
stop and restart connectors, and show their status, task configs and offsets, over a worker's
REST API (one REST call per command, named in each command's help).
"""

from __future__ import annotations

import json
from collections.abc import Callable
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


def _add_state_change(command: str, done: str, doc: str) -> None:
    """Add ``connectors COMMAND NAME``: one REST call, the client's method named COMMAND,
    that changes connector NAME's state and answers with no body, reported as
    ``<done> connector NAME`` (nothing with ``--json``). ``doc`` is the command's help."""

    def handler(c: ConnectClient, as_json: bool, name: str) -> int:
        getattr(c, command)(name)
        if not as_json:
            print(f"{done} connector {name}")
        return 0

    handler.__name__ = f"_{command}"
    handler.__doc__ = doc
    connectors.command(command)(remote(_name_argument()(handler)))


def _add_show(
    command: str,
    fetch: Callable[[ConnectClient, str], Any],
    render: Callable[[str, Any], None],
    doc: str,
) -> None:
    """Add ``connectors COMMAND NAME``: one REST read (``fetch``) about connector NAME, printed
    as JSON with ``--json`` and by ``render(NAME, answer)`` otherwise. ``doc`` is the
    command's help."""

    def handler(c: ConnectClient, as_json: bool, name: str) -> int:
        answer = fetch(c, name)
        if as_json:
            print_json(answer)
        else:
            render(name, answer)
        return 0

    handler.__name__ = f"_{command}"
    handler.__doc__ = doc
    connectors.command(command)(remote(_name_argument()(handler)))


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


def _print_config(config: dict[str, str]) -> None:
    """A config map, one indented ``key = value`` line per key, in key order."""
    for key in sorted(config):
        print(f"  {key} = {config[key]}")


def _print_info(name: str, info: Any) -> None:
    """A connector info answer (GET /connectors/NAME): name, type, task count and config."""
    print(f"Name:   {info['name']}")
    print(f"Type:   {info['type']}")
    print(f"Tasks:  {len(info['tasks'])}")
    print("Config:")
    _print_config(info["config"])


_add_show(
    "get",
    lambda c, name: c.connector(name),
    _print_info,
    """Show connector NAME's type, tasks and config.

    Calls GET /connectors/NAME.
    """,
)


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


_add_state_change("delete", "Deleted", "Delete connector NAME.\n\nCalls DELETE /connectors/NAME.")


_add_show(
    "status",
    lambda c, name: c.status(name),
    lambda name, status: print_status(status),
    """Show connector NAME's and its tasks' states.

    Calls GET /connectors/NAME/status.
    """,
)


# The commands that change connector NAME's state with one PUT and no answer body.
for _command, _done, _summary in (
    ("pause", "Pausing", "Pause connector NAME and its tasks."),
    ("resume", "Resuming", "Resume a paused or stopped connector NAME."),
    ("stop", "Stopped", "Stop connector NAME, shutting its tasks down."),
):
    _add_state_change(_command, _done, f"{_summary}\n\nCalls PUT /connectors/NAME/{_command}.")


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


def _print_tasks(name: str, tasks: Any) -> None:
    """A task configs answer (GET /connectors/NAME/tasks): each task's id and config."""
    if not tasks:
        print(f"Connector {name} has no tasks")
    for task in tasks:
        print(f"task {task['id']['task']}:")
        _print_config(task["config"])


_add_show(
    "tasks",
    lambda c, name: c.tasks(name),
    _print_tasks,
    """Show the configs of connector NAME's tasks.

    Calls GET /connectors/NAME/tasks.
    """,
)


_add_show(
    "offsets",
    lambda c, name: {"offsets": c.offsets(name)},
    lambda name, answer: print_offsets(name, answer["offsets"]),
    """Show connector NAME's committed offsets (KIP-875).

    Calls GET /connectors/NAME/offsets.
    """,
)
