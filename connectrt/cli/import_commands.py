"""``connectrt import --from URL``: copy the connectors of a running Kafka Connect cluster, with
their target states and KIP-875 offsets, into a connectrt cluster, over both REST APIs.

Steps (each one REST call or a few per connector, through :class:`~connectrt.client.ConnectClient`):

1. read the source: ``GET /connectors?expand=status&expand=info`` (configs as written, ``${...}``
   references unresolved, and states), with ``--stop-source`` then ``PUT /connectors/C/stop``
   and a wait until each is STOPPED (so its offsets stop moving), then ``GET
   /connectors/C/offsets``;
2. read the target: ``GET /connector-plugins?connectorsOnly=false``, its connectors, and for a
   name it already has that connector's config and offsets; ``PUT
   /connector-plugins/CLASS/config/validate`` for each config;
3. plan each connector (:mod:`connectrt.cli.import_plan`): create, unchanged, differs (left
   alone unless ``--overwrite``) or blocked (cannot run on the target, with the reasons);
4. unless ``--dry-run``: a connector with offsets is created STOPPED, its offsets written
   (``PATCH /connectors/C/offsets``), then it is resumed or paused as on the source; one
   without offsets is created in its state directly. ``--overwrite`` stops the target's
   connector, replaces its config, resets and writes its offsets, then sets its state.

The report never prints a secret key's value (connectrt's masking rule) and server messages
have those values removed. Exit status 0 when every connector is on the target as on the
source afterwards (created, overwritten or unchanged; in a dry run: would be); 1 when any is
blocked, differs and was left alone, or failed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from connectrt.cli.remote import Target, connect, remote

if TYPE_CHECKING:
    from connectrt.client import ConnectClient

__all__ = ["import_command"]


@click.command("import")
@remote
@click.option(
    "--from",
    "source_url",
    required=True,
    metavar="URL",
    help="REST URL of the Kafka Connect cluster to copy connectors from.",
)
@click.option(
    "--from-user",
    metavar="USER[:PASS]",
    help="HTTP Basic credentials for the source; without ':PASS' the password is asked.",
)
@click.option("--from-token", metavar="TOKEN", help="Bearer token for the source.")
@click.option("--from-insecure", is_flag=True, help="Do not verify the source's TLS certificate.")
@click.option(
    "--from-cacert",
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="CA bundle to verify the source's TLS certificate with.",
)
@click.option(
    "--connector",
    "only",
    multiple=True,
    metavar="NAME",
    help="Import only this connector (repeatable; default: all of them).",
)
@click.option("--dry-run", is_flag=True, help="Report what would happen; change nothing.")
@click.option(
    "--overwrite",
    is_flag=True,
    help="Replace a connector the target has with another config or other offsets.",
)
@click.option(
    "--stop-source",
    is_flag=True,
    help="Stop the connectors on the source (after reading their states) before reading "
    "their offsets, so both clusters never run them at once.",
)
@click.option(
    "--provider",
    "providers",
    multiple=True,
    metavar="NAME",
    help="A config provider the target's workers configure (repeatable); references to "
    "others are reported as blocking. Default: each one referred to is a warning to check.",
)
def import_command(
    target: ConnectClient,
    as_json: bool,
    source_url: str,
    from_user: str | None,
    from_token: str | None,
    from_insecure: bool,
    from_cacert: str | None,
    only: tuple[str, ...],
    dry_run: bool,
    overwrite: bool,
    stop_source: bool,
    providers: tuple[str, ...],
) -> int:
    """Copy connectors, states and offsets from Kafka Connect.

    Reads every connector of the Kafka Connect cluster at --from URL (config with its ${...}
    config provider references as written, target state, KIP-875 offsets) and creates it on
    the target worker (--url or the current context), STOPPED first, then its offsets, then
    its state. A connector the target cannot run (unknown connector class, converter,
    transformation, predicate or config provider, a config the target rejects) is reported
    and not imported. Running it again changes nothing: a connector the target already has
    with the same config and offsets is reported unchanged; one with another config or other
    offsets is reported and left alone unless --overwrite.
    """
    from connectrt.cli.import_run import apply_plans, plan_import, read_source, report

    if from_insecure and from_cacert:
        raise click.UsageError("--from-insecure and --from-cacert cannot be used together")
    if dry_run and stop_source:
        raise click.UsageError("--dry-run changes nothing: it cannot --stop-source")
    user = password = None
    if from_user:
        user, sep, pw = from_user.partition(":")
        password = pw if sep else click.prompt(f"Password for {user}", hide_input=True)
    verify: bool | str = False if from_insecure else (from_cacert or True)
    source_target = Target(source_url, user, password, from_token, verify)
    with connect(source_target, target.timeout) as source:
        connectors = read_source(source, only, stop_source)
    plans = plan_import(target, connectors, providers or None, overwrite)
    results = {} if dry_run else apply_plans(target, connectors, plans)
    return report(source_url, target.url, connectors, plans, results, dry_run, as_json)
