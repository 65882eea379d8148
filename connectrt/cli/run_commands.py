"""The ``connectrt`` commands that run something in this process, or print local facts:
``standalone``, ``worker``, ``spark``, ``broker``, ``demo``, ``plugins`` and ``config-docs``.

Each imports what it runs when it runs, so ``connectrt --help`` and the management commands
start without loading the runtime, FastAPI or PySpark.
"""

from __future__ import annotations

import click
from click.core import ParameterSource

from connectrt.cli.output import print_json, print_table
from connectrt.cli.remote import json_flag

__all__ = ["broker", "config_docs", "demo", "plugins", "spark", "standalone", "worker"]

_WORKER_FILE = click.Path(dir_okay=False)


@click.command("standalone")
@click.argument("worker_config", type=_WORKER_FILE)
@click.argument("connector_configs", nargs=-1, type=_WORKER_FILE)
def standalone(worker_config: str, connector_configs: tuple[str, ...]) -> int:
    """Run a worker with the connectors of files, and its REST API.

    WORKER_CONFIG is a worker .properties file; each of CONNECTOR_CONFIGS is a .properties
    file, a JSON config map or a JSON {name, config, initial_state} request.
    """
    from connectrt.process.standalone import run_standalone

    return run_standalone(worker_config, list(connector_configs))


@click.command("worker")
@click.argument("worker_config", type=_WORKER_FILE)
def worker(worker_config: str) -> int:
    """Run a worker managed over REST, its state in Kafka topics.

    Connectors are created over the REST API and kept, with their configs and status, in
    the worker's internal topics. WORKER_CONFIG is a worker .properties file (Kafka
    Connect's connect-distributed keys); with task.executor=spark this is 'connectrt spark'.
    """
    from connectrt.process.standalone import run_distributed
    from connectrt.runtime.properties import load_properties

    if load_properties(worker_config).get("task.executor", "threads") == "spark":
        return _run_spark(worker_config)
    return run_distributed(worker_config)


@click.command("spark")
@click.argument("worker_config", type=_WORKER_FILE)
def spark(worker_config: str) -> int:
    """Run a worker whose tasks run on Spark executors.

    The worker runs in the Spark driver with the REST API and Kafka-topic stores of
    'connectrt worker'; its tasks are long-running Spark tasks. spark.* keys of
    WORKER_CONFIG configure the Spark session.
    """
    return _run_spark(worker_config)


def _run_spark(worker_config: str) -> int:
    from connectrt.process.spark_worker import run_spark_worker

    return run_spark_worker(worker_config)


@click.command("broker")
@click.option(
    "--port", type=int, default=None, metavar="N", help="Port to listen on (default: a free one)."
)
def broker(port: int | None) -> int:
    """Run the embedded Kafka-protocol broker (in memory).

    For trying things locally. Prints 'bootstrap.servers=127.0.0.1:N' once it is ready,
    then runs until Ctrl-C. It is not Apache Kafka: see "The embedded broker" in the
    operator docs for how it differs.
    """
    from connectrt.broker import run_broker_cli

    return run_broker_cli(port)


@click.command("plugins")
@click.option(
    "--plugin-path",
    multiple=True,
    metavar="DIR",
    help="Also scan this plugin.path directory (repeatable, or comma-separated).",
)
@json_flag()
def plugins(plugin_path: tuple[str, ...], as_json: bool) -> int:
    """List the plugins connectrt can load.

    Connectors, converters, transforms, predicates and config providers: bundled, from
    entry points and from --plugin-path; then those that failed to load, with the reason.
    """
    from connectrt.runtime.plugins.registry import PUBLIC_PLUGIN_TYPES, registry

    dirs = [d.strip() for arg in plugin_path for d in arg.split(",") if d.strip()]
    registry.discover(dirs)
    types = [*PUBLIC_PLUGIN_TYPES, "configprovider"]
    found = sorted(registry.plugins(types), key=lambda p: (p.type, p.class_name))
    failures = registry.failures()
    if as_json:
        print_json(
            {
                "plugins": [
                    {"type": p.type, "class": p.class_name, "version": p.version()} for p in found
                ],
                "failures": [
                    {"name": f.name, "source": f.source, "error": str(f.error)} for f in failures
                ],
            }
        )
        return 0
    print_table(
        [[p.type, p.class_name, p.version() or ""] for p in found],
        header=["TYPE", "CLASS", "VERSION"],
    )
    if failures:
        print()
        print(f"failed to load ({len(failures)}):")
        for f in failures:
            print(f"  {f.name} ({f.source}): {f.error}")
    return 0


@click.command("config-docs")
def config_docs() -> int:
    """Print the configuration reference (Markdown).

    Generated from the config definitions of the worker and the bundled connectors.
    """
    from connectrt.cli.docs import config_reference

    print(config_reference(), end="")
    return 0


@click.command("demo")
@click.option(
    "--dir",
    "directory",
    default="demo-data",
    show_default=True,
    metavar="DIR",
    help="Working directory for the demo's files (configs, input, output).",
)
@click.option(
    "--lines",
    type=int,
    metavar="N",
    default=1000,
    show_default=True,
    help="Lines written to the input up front.",
)
@click.option(
    "--port", type=int, default=8083, show_default=True, metavar="N", help="REST API port."
)
@click.option(
    "--duration",
    type=float,
    default=None,
    metavar="SECONDS",
    help="Stop after this many seconds (default: run until Ctrl-C).",
)
@click.option(
    "-v",
    "--verbose",
    is_flag=True,
    help="Also show the INFO logs of the worker and its libraries (so does "
    "'connectrt --log-level LEVEL demo').",
)
def demo(directory: str, lines: int, port: int, duration: float | None, verbose: bool) -> int:
    """Run a demo: two pipelines on an embedded broker.

    File -> Kafka -> file, and datagen -> Kafka as Avro. Starts the embedded broker and a
    standalone worker with the built-in schema registry, prints one progress line every
    2 s and a summary at the end.
    """
    from connectrt.cli.demo import run_demo

    root = click.get_current_context().find_root()
    chosen_level = root.get_parameter_source("log_level") is not ParameterSource.DEFAULT
    return run_demo(directory, lines, duration, port, verbose=verbose or chosen_level)
