"""``connectrt pack-env``: the Python environment for Spark executors, as one archive.

Imports :mod:`connectrt.spark.pack_env` when it runs (no PySpark needed to pack).
"""

from __future__ import annotations

from pathlib import Path

import click

__all__ = ["pack_env_command"]


@click.command("pack-env")
@click.option(
    "-o",
    "--output",
    default="connectrt-env.tar.gz",
    show_default=True,
    metavar="FILE",
    help="The archive to write.",
)
@click.option(
    "--dist",
    "distributions",
    multiple=True,
    metavar="NAME[EXTRA]",
    help="Also pack this installed distribution and its requirements (repeatable): your "
    "connector plugins, or connectrt[extra] for an extra's packages.",
)
@click.option(
    "--package",
    "packages",
    multiple=True,
    metavar="NAME",
    help="Also pack this top-level package from where it imports now (repeatable): plugins "
    "not installed as distributions.",
)
@click.option(
    "--exclude",
    multiple=True,
    metavar="NAME",
    help="Leave out this distribution though required (repeatable), e.g. one your nodes have.",
)
@click.option(
    "--python",
    metavar="PATH",
    default=None,
    help="The interpreter the archive's bin/python links to on the nodes (default: this "
    "one's); it must be this Python's version.",
)
@click.option(
    "-c",
    "--compress-level",
    type=click.IntRange(1, 9),
    default=6,
    metavar="1-9",
    show_default=True,
    help="gzip level: 1 packs fastest, 9 smallest.",
)
def pack_env_command(
    output: str,
    distributions: tuple[str, ...],
    packages: tuple[str, ...],
    exclude: tuple[str, ...],
    compress_level: int,
    python: str | None,
) -> int:
    """Pack connectrt's Python environment for Spark executors.

    Writes a relocatable virtualenv (.tar.gz) with connectrt and what it requires, taken from
    the environment this command runs in, to ship with spark-submit's --archives
    FILE#environment and spark.pyspark.python=./environment/bin/python (deploy/spark/submit.sh).
    The archive's python links to this interpreter (or --python): the nodes need that Python,
    of this version, and this OS and CPU architecture. pyspark is not packed (the nodes'
    Spark provides it).
    """
    from connectrt.spark.pack_env import pack_env

    packed = pack_env(Path(output), distributions, packages, exclude, compress_level, python)
    click.echo(
        f"wrote {packed.output} ({packed.size / 1e6:.1f} MB, {packed.files} files, "
        f"{len(packed.distributions)} distributions"
        + (f", packages {', '.join(packed.packages)}" if packed.packages else "")
        + ")"
    )
    for name in packed.distributions:
        click.echo(f"  {name}")
    return 0
