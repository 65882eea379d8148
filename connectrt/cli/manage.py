"""``connectrt`` management subcommands: talk to a running worker's REST API.

* ``connectrt connectors list | get | create -f FILE | update NAME -f FILE | delete | status |
  pause | resume | stop | restart [--include-tasks] [--only-failed] | tasks | offsets``
* ``connectrt offsets reset NAME --to-earliest | --to-latest | --to-datetime T | --to-offset N
  [--topic T]``
* ``connectrt auth hash-password [USER]`` and ``connectrt auth hash-token``: lines for the
  worker's ``rest.auth.credentials.file`` / ``rest.auth.tokens.file``

Every command talking to a worker takes ``--url`` (env ``CONNECTRT_URL``, default
``http://localhost:8083``), ``--user USER:PASS`` (``CONNECTRT_USER``), ``--token``
(``CONNECTRT_TOKEN``), ``--insecure`` / ``--cacert FILE`` and ``--json`` (print the server's
JSON answer as is, for scripts). A server error prints ``error: <message> (HTTP <status>)``,
an unreachable worker ``error: cannot reach <url>: ...``; both exit with status 1.
"""

from __future__ import annotations

import argparse
import getpass
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from connectrt.errors import ConfigError

if TYPE_CHECKING:
    from connectrt.client import ConnectClient

__all__ = ["add_management_commands"]

DEFAULT_URL = "http://localhost:8083"

Handler = Callable[["ConnectClient", argparse.Namespace], int]


# -- parser ------------------------------------------------------------------------------------
def _common_options() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    g = common.add_argument_group("worker connection")
    g.add_argument(
        "--url",
        default=None,
        help=f"worker REST URL (env CONNECTRT_URL, default {DEFAULT_URL})",
    )
    g.add_argument(
        "--user",
        default=None,
        metavar="USER:PASS",
        help="HTTP Basic credentials (env CONNECTRT_USER); without ':PASS' the password is asked",
    )
    g.add_argument("--token", default=None, help="bearer token (env CONNECTRT_TOKEN)")
    g.add_argument("--insecure", action="store_true", help="do not verify the TLS certificate")
    g.add_argument("--cacert", default=None, metavar="FILE", help="CA bundle to verify TLS")
    g.add_argument("--timeout", type=float, default=30.0, help="request timeout in seconds")
    g.add_argument("--json", action="store_true", help="print the raw JSON answer")
    return common


def add_management_commands(subparsers: Any) -> None:
    """Add ``connectors``, ``offsets`` and ``auth`` to the ``connectrt`` parser's subcommands."""
    common = _common_options()

    def leaf(group: Any, name: str, handler: Handler, help: str) -> argparse.ArgumentParser:
        p: argparse.ArgumentParser = group.add_parser(name, help=help, parents=[common])
        p.set_defaults(func=_remote(handler))
        return p

    # connectors ...
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

    # offsets ...
    off = subparsers.add_parser("offsets", help="move a connector's offsets")
    os_ = off.add_subparsers(dest="action", required=True, metavar="ACTION")
    p = leaf(os_, "reset", _reset, "rewind or fast-forward: stop, move offsets, resume")
    p.add_argument("name")
    to = p.add_mutually_exclusive_group(required=True)
    to.add_argument("--to-earliest", action="store_true", help="the earliest retained offsets")
    to.add_argument("--to-latest", action="store_true", help="the end of the topics")
    to.add_argument(
        "--to-datetime", metavar="T", help="the first offsets at/after ISO-8601 time T (sinks)"
    )
    to.add_argument("--to-offset", type=int, metavar="N", help="offset N in every partition")
    p.add_argument("--topic", default=None, help="only this topic (sinks)")

    # auth ...
    auth = subparsers.add_parser("auth", help="make entries for the REST credentials files")
    au = auth.add_subparsers(dest="action", required=True, metavar="ACTION")
    p = au.add_parser(
        "hash-password",
        help="print 'USER:pbkdf2_sha256$...' for rest.auth.credentials.file",
        description="Reads the password from stdin (first line) or asks for it.",
    )
    p.add_argument("user", nargs="?", default=None)
    p.add_argument("--iterations", type=int, default=None, help="PBKDF2 iterations")
    p.set_defaults(func=_hash_password)
    p = au.add_parser(
        "hash-token",
        help="print 'sha256:...' for rest.auth.tokens.file",
        description="Reads the token from stdin (first line) or asks for it.",
    )
    p.set_defaults(func=_hash_token)


# -- running a remote command ------------------------------------------------------------------
def _remote(handler: Handler) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        from connectrt.client import ClientError, ConnectClient, ConnectionFailed

        if str(getattr(args, "log_level", "INFO")).upper() != "DEBUG":
            logging.getLogger("httpx").setLevel(logging.WARNING)  # no INFO line per request
        url = args.url or os.environ.get("CONNECTRT_URL") or DEFAULT_URL
        if args.insecure and args.cacert:
            return _fail("--insecure and --cacert cannot be used together")
        try:
            client = ConnectClient(
                url,
                auth=_credentials(args.user or os.environ.get("CONNECTRT_USER")),
                token=args.token or os.environ.get("CONNECTRT_TOKEN") or None,
                verify=False if args.insecure else (args.cacert or True),
                timeout=args.timeout,
            )
        except OSError as e:  # unreadable --cacert
            return _fail(f"cannot use CA file {args.cacert}: {e.strerror or e}")
        try:
            with client:
                return handler(client, args)
        except ClientError as e:
            lines = e.message.splitlines() or [""]
            return _fail(f"{lines[0]} (HTTP {e.status})", lines[1:])
        except ConnectionFailed as e:
            return _fail(str(e))

    return run


def _credentials(user: str | None) -> tuple[str, str] | None:
    if not user:
        return None
    name, sep, password = user.partition(":")
    if not sep:
        password = getpass.getpass(f"Password for {name}: ")
    return name, password


def _fail(message: str, more: Sequence[str] = ()) -> int:
    print(f"error: {message}", file=sys.stderr)
    for line in more:
        print(f"  {line}", file=sys.stderr)
    return 1


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2))


def _table(rows: Sequence[Sequence[str]]) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        cells = [c.ljust(w) for c, w in zip(row, widths, strict=True)]
        print("  ".join(cells).rstrip())


def _first_line(trace: str | None) -> str:
    return (trace or "").strip().splitlines()[0] if (trace or "").strip() else ""


# -- connectors --------------------------------------------------------------------------------
def _list(c: ConnectClient, args: argparse.Namespace) -> int:
    listing = c.connectors(expand=("status", "info"))
    if args.json:
        _print_json(listing)
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
    _table(rows)
    return 0


def _get(c: ConnectClient, args: argparse.Namespace) -> int:
    info = c.connector(args.name)
    if args.json:
        _print_json(info)
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
        _print_json(info)
    else:
        print(f"Created connector {info['name']} ({info['type']})")
    return 0


def _update(c: ConnectClient, args: argparse.Namespace) -> int:
    config = _load_config_for(args.name, args.file)
    existed = args.name in c.connectors()
    info = c.put_config(args.name, config)
    if args.json:
        _print_json(info)
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
        _print_json(status)
        return 0
    _print_status(status)
    return 0


def _print_status(status: Any) -> None:
    connector = status["connector"]
    rows = [
        [
            f"connector {status['name']}",
            str(status.get("type", "")),
            connector["state"],
            connector.get("worker_id", ""),
            _first_line(connector.get("trace")),
        ]
    ]
    for task in status.get("tasks", []):
        rows.append(
            [
                f"  task {task['id']}",
                "",
                task["state"],
                task.get("worker_id", ""),
                _first_line(task.get("trace")),
            ]
        )
    _table(rows)


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
            _print_json(plan)
        return 0
    if plan is None:
        print(f"Restarted connector {args.name}")
    else:
        _print_status(plan)
    return 0


def _tasks(c: ConnectClient, args: argparse.Namespace) -> int:
    tasks = c.tasks(args.name)
    if args.json:
        _print_json(tasks)
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
        _print_json({"offsets": offsets})
        return 0
    _print_offsets(args.name, offsets)
    return 0


def _print_offsets(name: str, offsets: Sequence[Any]) -> None:
    if not offsets:
        print(f"Connector {name} has no committed offsets")
        return
    rows = [["PARTITION", "OFFSET"]]
    for entry in offsets:
        rows.append([_compact(entry["partition"]), _compact(entry["offset"])])
    _table(rows)


def _compact(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


# -- offsets -----------------------------------------------------------------------------------
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
        _print_json({"offsets": offsets})
        return 0
    target = {"timestamp": args.to_datetime, "offset": f"offset {args.to_offset}"}.get(to, to)
    print(f"Reset connector {args.name} to {target}")
    if offsets:
        _print_offsets(args.name, offsets)
    return 0


# -- auth --------------------------------------------------------------------------------------
def _read_secret(prompt: str, confirm: bool) -> str:
    if not sys.stdin.isatty():
        return sys.stdin.readline().rstrip("\r\n")
    secret = getpass.getpass(f"{prompt}: ")
    if confirm and getpass.getpass(f"{prompt} (again): ") != secret:
        raise ConfigError(f"The two {prompt.lower()}s differ")
    return secret


def _hash_password(args: argparse.Namespace) -> int:
    from connectrt.listener.auth import hash_password

    if args.user is not None and (":" in args.user or not args.user.strip()):
        raise ConfigError(f"Invalid user name {args.user!r}: it must be non-empty, without ':'")
    if args.iterations is not None and args.iterations < 1:
        raise ConfigError("--iterations must be positive")
    password = _read_secret("Password", confirm=True)
    if not password:
        raise ConfigError("Empty password")
    if args.iterations is None:
        hashed = hash_password(password)
    else:
        hashed = hash_password(password, args.iterations)
    print(f"{args.user}:{hashed}" if args.user is not None else hashed)
    return 0


def _hash_token(args: argparse.Namespace) -> int:
    from connectrt.listener.auth import hash_token

    token = _read_secret("Token", confirm=False).strip()
    if not token:
        raise ConfigError("Empty token")
    print(hash_token(token))
    return 0
