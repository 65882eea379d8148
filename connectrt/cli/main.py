"""The ``connectrt`` command: its root group, the list of its commands and :func:`main`.

A command module defines a click command or group; :data:`SECTIONS` registers it under a
heading of ``connectrt --help`` (this is the one place to add a command).

Exit statuses: 0 success; 1 an error reported as one ``error: ...`` line on stderr (bad input:
missing file, bad key, unknown connector class, unreachable broker or worker, a server error,
an invalid config for ``connectors validate``), never a traceback; 2 a usage error (unknown
option, missing argument), raised as ``SystemExit(2)`` as argparse did; 130 interrupted.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from typing import Any

import click

from connectrt import __version__
from connectrt.cli.auth_commands import auth
from connectrt.cli.completion import completion_command
from connectrt.cli.connector_commands import connectors
from connectrt.cli.context_commands import context
from connectrt.cli.dlq_commands import dlq
from connectrt.cli.groups import OrderedGroup
from connectrt.cli.import_commands import import_command
from connectrt.cli.offset_commands import offsets
from connectrt.cli.pack_commands import pack_env_command
from connectrt.cli.run_commands import (
    broker,
    config_docs,
    demo,
    plugins,
    spark,
    standalone,
    worker,
)
from connectrt.cli.tap_commands import tap_command
from connectrt.errors import ConnectError
from connectrt.process.allocator import WORKER_COMMANDS, AllocatorError, use_preferred_allocator

__all__ = ["SECTIONS", "cli", "main"]

#: The commands of ``connectrt``, by heading of its help, in the order shown.
SECTIONS: tuple[tuple[str, tuple[click.Command, ...]], ...] = (
    ("Run", (standalone, worker, spark, broker, demo)),
    ("Manage a running worker", (connectors, offsets, dlq, tap_command, import_command)),
    ("Set up", (context, auth, plugins, config_docs, pack_env_command, completion_command)),
)

_CONTEXT_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"]}


class _SectionedGroup(OrderedGroup):
    """A group that lists its commands under the headings of :data:`SECTIONS`, in their
    order; commands added any other way are listed under "Other commands"."""

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        names = [n for n in self.list_commands(ctx) if not self.commands[n].hidden]
        if not names:
            return
        width = max(len(n) for n in names)
        limit = formatter.width - 6 - width
        placed: set[str] = set()
        sections: list[tuple[str, list[str]]] = []
        for title, commands in SECTIONS:
            listed = [c.name for c in commands if c.name in names]
            sections.append((title, [n for n in listed if n is not None]))
            placed.update(n for n in listed if n is not None)
        sections.append(("Other commands", [n for n in names if n not in placed]))
        for title, section in sections:
            if section:
                with formatter.section(title):
                    # Names padded to one width, so every section's help column aligns.
                    formatter.write_dl(
                        [
                            (n.ljust(width), self.commands[n].get_short_help_str(limit))
                            for n in section
                        ]
                    )


@click.group(cls=_SectionedGroup, context_settings=_CONTEXT_SETTINGS)
@click.version_option(
    __version__, "--version", prog_name="connectrt", message="%(prog)s %(version)s"
)
@click.option(
    "--log-level",
    default="INFO",
    show_default=True,
    metavar="LEVEL",
    help="Log level of what the command runs (DEBUG, INFO, WARNING, ERROR).",
)
def cli(log_level: str) -> None:
    """Run Kafka Connect-style connectors in Python, and manage them.

    connectrt runs source and sink connectors between Kafka and other systems: in a
    standalone worker from files, in a worker managed over Kafka Connect's REST API, or
    with its tasks on Spark executors. The management commands talk to any running worker;
    'connectrt demo' shows a pipeline on an embedded broker in one command.

    Run 'connectrt COMMAND --help' for a command's options.
    """
    logging.basicConfig(
        level=getattr(logging, log_level.upper(), logging.INFO),
        format="[%(asctime)s] %(levelname)s %(message)s (%(name)s)",
    )


for _title, _commands in SECTIONS:
    for _command in _commands:
        cli.add_command(_command)


def _command_name(args: Sequence[str]) -> str | None:
    """The command ``args`` run (the first argument that is not an option or its value)."""
    takes_value = {"--log-level"}
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in takes_value:
            skip = True
        elif not arg.startswith("-"):
            return arg
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``connectrt`` with ``argv`` (default: ``sys.argv[1:]``); the exit status.

    Run as a program (``argv`` None), a command that runs a worker first makes the process
    run with the preferred memory allocator (:mod:`connectrt.process.allocator`, which may
    execute the process again)."""
    if argv is None and _command_name(sys.argv[1:]) in WORKER_COMMANDS:
        try:
            use_preferred_allocator()
        except AllocatorError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
    try:
        rv = cli.main(
            args=list(argv) if argv is not None else None,
            prog_name="connectrt",
            standalone_mode=False,
        )
    except click.UsageError as e:
        e.show()
        raise SystemExit(e.exit_code) from None
    except click.Abort:
        print(file=sys.stderr)
        return 130
    except click.ClickException as e:
        e.show()
        return e.exit_code
    except ConnectError as e:
        lines = str(e).splitlines() or [type(e).__name__]
        print(f"error: {lines[0]}", file=sys.stderr)
        for line in lines[1:]:
            print(f"  {line}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return rv if isinstance(rv, int) else 0
