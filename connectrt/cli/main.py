"""The ``connectrt`` command.

* ``connectrt standalone WORKER.properties [CONNECTOR.properties|.json ...]``
* ``connectrt spark WORKER.properties``: the same worker with its connector tasks running as
  long-running Spark tasks (also ``connectrt worker`` with ``task.executor=spark``)
* ``connectrt broker [--port N]``: the embedded Kafka-protocol broker, for local use
* ``connectrt plugins [--plugin-path DIR]``: the plugins connectrt can load (bundled, from
  entry points and from DIR), then those that failed to load
* ``connectrt demo``: embedded broker + standalone worker running file -> topic -> file

Bad input (missing file, bad key, unknown connector class, unreachable broker) ends with a
one-line ``error: ...`` on stderr and exit status 1, never a traceback.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from connectrt import __version__
from connectrt.cli.manage import add_management_commands
from connectrt.errors import ConnectError

__all__ = ["main"]


def _setup_logging(level: str) -> None:
    logging.basicConfig(
        level=getattr(logging, level.upper(), logging.INFO),
        format="[%(asctime)s] %(levelname)s %(message)s (%(name)s)",
    )


def _cmd_standalone(args: argparse.Namespace) -> int:
    from connectrt.process.standalone import run_standalone

    return run_standalone(args.worker_config, args.connector_configs)


def _cmd_worker(args: argparse.Namespace) -> int:
    from connectrt.process.standalone import run_distributed
    from connectrt.runtime.properties import load_properties

    if load_properties(args.worker_config).get("task.executor", "threads") == "spark":
        return _cmd_spark(args)
    return run_distributed(args.worker_config)


def _cmd_spark(args: argparse.Namespace) -> int:
    from connectrt.process.spark_worker import run_spark_worker

    return run_spark_worker(args.worker_config)


def _cmd_broker(args: argparse.Namespace) -> int:
    from connectrt.broker import run_broker_cli

    return run_broker_cli(args.port)


def _cmd_plugins(args: argparse.Namespace) -> int:
    from connectrt.runtime.plugins import PUBLIC_PLUGIN_TYPES, registry

    dirs = [d.strip() for arg in args.plugin_path or [] for d in arg.split(",") if d.strip()]
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


def _cmd_demo(args: argparse.Namespace) -> int:
    from connectrt.cli.demo import run_demo

    return run_demo(args.dir, args.lines, args.duration, args.port)


def _cmd_config_docs(args: argparse.Namespace) -> int:
    from connectrt.cli.docs import config_reference

    print(config_reference(), end="")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="connectrt", description=__doc__.split("\n")[0])
    parser.add_argument("--version", action="version", version=f"connectrt {__version__}")
    parser.add_argument("--log-level", default="INFO")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("standalone", help="run a standalone worker")
    p.add_argument("worker_config")
    p.add_argument("connector_configs", nargs="*")
    p.set_defaults(func=_cmd_standalone)

    p = sub.add_parser(
        "worker", help="run a worker managed over REST, with configs and status in Kafka topics"
    )
    p.add_argument("worker_config")
    p.set_defaults(func=_cmd_worker)

    p = sub.add_parser(
        "spark",
        help="run a worker (REST, Kafka-topic stores) in the Spark driver, its connector tasks "
        "as long-running Spark tasks; spark.* worker properties configure Spark",
    )
    p.add_argument("worker_config")
    p.set_defaults(func=_cmd_spark)

    p = sub.add_parser("broker", help="run the embedded Kafka-protocol broker")
    p.add_argument("--port", type=int, default=None)
    p.set_defaults(func=_cmd_broker)

    p = sub.add_parser("plugins", help="list available plugins")
    p.add_argument(
        "--plugin-path",
        action="append",
        metavar="DIR",
        help="also scan this plugin.path directory (repeatable, or comma-separated)",
    )
    p.set_defaults(func=_cmd_plugins)

    p = sub.add_parser("config-docs", help="print the configuration reference (Markdown)")
    p.set_defaults(func=_cmd_config_docs)

    p = sub.add_parser("demo", help="run the file -> Kafka -> file demo on an embedded broker")
    p.add_argument("--dir", default="demo-data", help="working directory for the demo files")
    p.add_argument("--lines", type=int, default=1000, help="lines written up front")
    p.add_argument("--port", type=int, default=8083, help="REST API port")
    p.add_argument(
        "--duration",
        type=float,
        default=None,
        help="stop after this many seconds (default: run until Ctrl-C)",
    )
    p.set_defaults(func=_cmd_demo)
    add_management_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _setup_logging(args.log_level)
    try:
        return int(args.func(args))
    except ConnectError as e:
        lines = str(e).splitlines() or [type(e).__name__]
        print(f"error: {lines[0]}", file=sys.stderr)
        for line in lines[1:]:
            print(f"  {line}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
