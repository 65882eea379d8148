"""The ``connectrt`` command (click): run workers, the embedded broker and the demo; manage a
running worker's connectors over REST; keep named contexts; print shell completion.

Process commands: ``standalone``, ``worker``, ``spark``, ``broker``, ``plugins``,
``config-docs``, ``demo``. Management commands (:mod:`.connector_commands`,
:mod:`.offset_commands`, :mod:`.auth_commands`, :mod:`.context_commands`) and
``completion`` (:mod:`.completion`).

Exit statuses: 0 success; 1 bad input or a failed request, with a one-line ``error: ...`` on
stderr (a missing file, a bad key, an unknown connector class, an unreachable worker or broker,
an HTTP error with the server's message), never a traceback; 2 a command-line usage error;
130 interrupted.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence

import click

from connectrt import __version__
from connectrt.cli.auth_commands import auth
from connectrt.cli.completion import completion
from connectrt.cli.connector_commands import connectors
from connectrt.cli.context_commands import context
from connectrt.cli.offset_commands import offsets
from connectrt.errors import ConnectError

__all__ = ["cli", "main"]

_LEVELS = ["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]


def _setup_logging(level: str) -> None:
    logging.basicConfig(
        level=getattr(logging, level.upper(), logging.INFO),
        format="[%(asctime)s] %(levelname)s %(message)s (%(name)s)",
    )


@click.group(
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    help="connectrt: a Kafka Connect-compatible connector runtime in Python.\n\n"
    "Run a worker (standalone, worker, spark), the embedded broker or the demo; manage the "
    "connectors of a running worker (connectors, offsets) from any machine that reaches its "
    "REST API, using saved contexts (context).",
    epilog='Shell completion: eval "$(connectrt completion bash)" (or zsh, fish).',
)
@click.version_option(
    __version__, "--version", prog_name="connectrt", message="%(prog)s %(version)s"
)
@click.option(
    "--log-level",
    type=click.Choice(_LEVELS, case_sensitive=False),
    default="INFO",
    show_default=True,
    help="Log level of the processes this command runs (before the subcommand)",
)
def cli(log_level: str) -> None:
    _setup_logging(log_level)


_WORKER_FILE = click.argument("worker_config", metavar="WORKER.properties")


@cli.command(
    help="Run a standalone worker with the connector files given (.properties, a JSON config "
    'map, or a JSON {"name", "config", "initial_state"} request), and its REST API.'
)
@_WORKER_FILE
@click.argument("connector_configs", nargs=-1, metavar="[CONNECTOR-FILE]...")
def standalone(worker_config: str, connector_configs: tuple[str, ...]) -> int:
    from connectrt.process.standalone import run_standalone

    return run_standalone(worker_config, list(connector_configs))


@cli.command(
    help="Run a worker managed over REST, with its connector configs and status in Kafka "
    "topics (task.executor=spark runs it as 'connectrt spark')."
)
@_WORKER_FILE
def worker(worker_config: str) -> int:
    from connectrt.process.standalone import run_distributed
    from connectrt.runtime.properties import load_properties

    if load_properties(worker_config).get("task.executor", "threads") == "spark":
        return _run_spark(worker_config)
    return run_distributed(worker_config)


def _run_spark(worker_config: str) -> int:
    from connectrt.process.spark_worker import run_spark_worker

    return run_spark_worker(worker_config)


@cli.command(
    help="Run a worker (REST, Kafka-topic stores) in the Spark driver, its connector tasks as "
    "long-running Spark tasks; spark.* worker properties configure Spark."
)
@_WORKER_FILE
def spark(worker_config: str) -> int:
    return _run_spark(worker_config)


@cli.command(help="Run the embedded Kafka-protocol broker (in memory) until interrupted.")
@click.option("--port", type=int, default=None, help="Port to listen on [default: a free one]")
def broker(port: int | None) -> int:
    from connectrt.broker import run_broker_cli

    return run_broker_cli(port)


@cli.command(help="List the plugins connectrt can load, then those that failed to load.")
@click.option(
    "--plugin-path",
    multiple=True,
    metavar="DIR",
    help="Also scan this plugin.path directory (repeatable, or comma-separated)",
)
def plugins(plugin_path: tuple[str, ...]) -> int:
    from connectrt.runtime.plugins import PUBLIC_PLUGIN_TYPES, registry

    dirs = [d.strip() for arg in plugin_path for d in arg.split(",") if d.strip()]
    registry.discover(dirs)
    types = [*PUBLIC_PLUGIN_TYPES, "configprovider"]
    for p in sorted(registry.plugins(types), key=lambda p: (p.type, p.class_name)):
        version = p.version() or ""
        print(f"{p.type:<17} {p.class_name:<60} {version}".rstrip())
    failures = registry.failures()
    if failures:
        print()
        print(f"failed to load ({len(failures)}):")
        for f in failures:
            print(f"  {f.name} ({f.source}): {f.error}")
    return 0


@cli.command("config-docs", help="Print the configuration reference (Markdown).")
def config_docs() -> int:
    from connectrt.cli.docs import config_reference

    print(config_reference(), end="")
    return 0


@cli.command(help="Run the file -> Kafka -> file demo on an embedded broker.")
@click.option(
    "--dir",
    "directory",
    default="demo-data",
    show_default=True,
    help="Working directory for the demo files",
)
@click.option("--lines", type=int, default=1000, show_default=True, help="Lines written up front")
@click.option("--port", type=int, default=8083, show_default=True, help="REST API port")
@click.option(
    "--duration",
    type=float,
    default=None,
    help="Stop after this many seconds [default: run until Ctrl-C]",
)
def demo(directory: str, lines: int, port: int, duration: float | None) -> int:
    from connectrt.cli.demo import run_demo

    return run_demo(directory, lines, duration, port)


cli.add_command(connectors)
cli.add_command(offsets)
cli.add_command(context)
cli.add_command(auth)
cli.add_command(completion)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); the exit status."""
    args = list(argv) if argv is not None else sys.argv[1:]
    try:
        result = cli.main(args=args, prog_name="connectrt", standalone_mode=False)
    except click.ClickException as e:  # usage errors (2), bad parameters
        e.show()
        return e.exit_code
    except (click.Abort, KeyboardInterrupt):
        return 130
    except ConnectError as e:
        lines = str(e).splitlines() or [type(e).__name__]
        print(f"error: {lines[0]}", file=sys.stderr)
        for line in lines[1:]:
            print(f"  {line}", file=sys.stderr)
        return 1
    return int(result or 0)
