"""The work of ``connectrt import`` (:mod:`connectrt.cli.import_commands`): read the source
cluster, plan against the target (:mod:`connectrt.cli.import_plan`), apply, report.

Kept apart from the command so that ``connectrt --help`` and the other commands do not import
the runtime's masking rule, the transformation catalogue and httpx.

Threading: one call at a time per client; every function runs on the caller's thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from connectrt.cli.import_plan import (
    ConnectorPlan,
    Finding,
    PluginCatalog,
    SourceConnector,
    TargetConnector,
    masked_config,
    plan_connector,
    redact_config_values,
)
from connectrt.cli.output import print_json, print_table
from connectrt.client import ClientError, ConnectClient
from connectrt.errors import ConnectError

__all__ = ["apply_plans", "plan_import", "read_source", "report"]

T = TypeVar("T")

#: How long a step waits for the other side to settle (a stop to take effect, a rebalance).
SETTLE_TIMEOUT = 120.0

_DONE = {
    "create": "created",
    "overwrite": "overwritten",
    "unchanged": "unchanged",
    "differs": "differs (left alone)",
    "blocked": "blocked",
}
_WOULD = {
    "create": "would create",
    "overwrite": "would overwrite",
    "unchanged": "unchanged",
    "differs": "differs (would be left alone)",
    "blocked": "blocked",
}


def read_source(source: ConnectClient, only: Sequence[str], stop: bool) -> list[SourceConnector]:
    """The source's connectors (those of ``only``, if given), their states read before any
    ``stop``; offsets read after it. A connector ``only`` names that the source lacks is a
    ClientError 404 from ``GET /connectors/NAME``."""
    listing = source.connectors(expand=("status", "info"))
    names = list(only) if only else sorted(listing)
    seen: list[tuple[str, dict[str, str], str, str | None]] = []
    for name in names:
        entry = listing.get(name)
        info: dict[str, Any]
        status: dict[str, Any]
        if entry is None:  # not listed: ask for it, so a wrong name answers 404
            info, status = dict(source.connector(name)), dict(source.status(name))
        else:
            info, status = entry.get("info") or {}, entry.get("status") or {}
        config = dict(info.get("config") or source.config(name))
        state = str((status.get("connector") or {}).get("state", "UNASSIGNED"))
        seen.append((name, config, state, info.get("type")))
    if stop:
        for name, _config, state, _type in seen:
            if state != "STOPPED":
                source.stop(name)
        for name, *_ in seen:
            _wait(
                lambda n=name: _stopped(source.status(n)),  # type: ignore[misc]
                f"connector {name} to be STOPPED on the source",
            )
    out = []
    for name, config, state, type_ in seen:
        try:
            offsets: list[Any] | None = list(source.offsets(name))
            error = None
        except ClientError as e:
            offsets, error = None, redact_config_values(str(e), config)
        out.append(SourceConnector(name, config, state, offsets, error, type_))
    return out


def plan_import(
    target: ConnectClient,
    connectors: Sequence[SourceConnector],
    providers: Sequence[str] | None,
    overwrite: bool,
) -> list[ConnectorPlan]:
    """One plan per source connector, from what the target has and can load."""
    catalog = PluginCatalog(target.plugins(connectors_only=False))
    on_target = target.connectors(expand=("status",))
    plans = []
    for source in connectors:
        existing = None
        if source.name in on_target:
            state = (on_target[source.name].get("status") or {}).get("connector") or {}
            try:
                offsets: list[Any] | None = list(target.offsets(source.name))
            except ClientError:
                offsets = None
            existing = TargetConnector(
                target.config(source.name), str(state.get("state", "UNASSIGNED")), offsets
            )
        plan = plan_connector(
            source,
            existing,
            catalog,
            providers=providers,
            overwrite=overwrite,
            validation_errors=_validation(target, catalog, source),
        )
        if source.state not in ("STOPPED",):
            plan.warnings.append(
                Finding(
                    None,
                    f"is {source.state} on the source: its offsets may move on after they are "
                    "read, and once imported both clusters run it (stop it there first, or "
                    "use --stop-source)",
                )
            )
        plans.append(plan)
    return plans


def _validation(
    target: ConnectClient, catalog: PluginCatalog, source: SourceConnector
) -> list[Finding]:
    """The target's validation errors for the config (none asked when the class is unknown:
    the plan reports that)."""
    cls = source.config.get("connector.class", "")
    if not catalog.has(cls, ("source", "sink")):
        return []
    try:
        answer = target.validate(cls, source.config)
    except ClientError as e:
        return [Finding(None, "the target could not validate it: " + _safe(e, source))]
    out = []
    for item in answer.get("configs") or []:
        value = item.get("value") or {}
        errors = value.get("errors") or []
        if errors:
            text = "; ".join(str(x) for x in errors)
            out.append(
                Finding(
                    str(value.get("name")),
                    "the target rejects it: " + redact_config_values(text, source.config),
                )
            )
    return out


def apply_plans(
    target: ConnectClient, connectors: Sequence[SourceConnector], plans: Sequence[ConnectorPlan]
) -> dict[str, str]:
    """Carry out the plans; the result of each connector whose plan changes something
    (``created``, ``overwritten`` or ``failed: <message>``), by name."""
    results: dict[str, str] = {}
    for source, plan in zip(connectors, plans, strict=True):
        if plan.action not in ("create", "overwrite"):
            continue
        try:
            if plan.action == "create":
                _create(target, source, plan)
            else:
                _overwrite(target, source, plan)
            results[plan.name] = _DONE[plan.action]
        except ClientError as e:
            results[plan.name] = "failed: " + _safe(e, source)
    return results


def _create(target: ConnectClient, source: SourceConnector, plan: ConnectorPlan) -> None:
    if not plan.offsets:
        target.create(plan.name, source.config, initial_state=plan.state)
        return
    target.create(plan.name, source.config, initial_state="STOPPED")
    _settled(lambda: target.alter_offsets(plan.name, plan.offsets))
    _set_state(target, plan.name, plan.state)


def _overwrite(target: ConnectClient, source: SourceConnector, plan: ConnectorPlan) -> None:
    target.stop(plan.name)
    _wait(lambda: _stopped(target.status(plan.name)), f"connector {plan.name} to be STOPPED")
    target.put_config(plan.name, source.config)
    _settled(lambda: target.reset_offsets(plan.name))
    if plan.offsets:
        _settled(lambda: target.alter_offsets(plan.name, plan.offsets))
    _set_state(target, plan.name, plan.state)


def _set_state(target: ConnectClient, name: str, state: str) -> None:
    if state == "RUNNING":
        target.resume(name)
    elif state == "PAUSED":
        target.pause(name)


def _stopped(status: Any) -> bool:
    return bool(status["connector"]["state"] == "STOPPED" and not status.get("tasks"))


def _settled(call: Callable[[], T]) -> T:
    """``call()``, asked again while the worker answers that the connector is not STOPPED yet
    (its tasks still stopping) or that its group is rebalancing, up to :data:`SETTLE_TIMEOUT`."""
    deadline = time.monotonic() + SETTLE_TIMEOUT
    while True:
        try:
            return call()
        except ClientError as e:
            transient = (e.status == 400 and "STOPPED state" in e.message) or (
                e.status in (409, 500) and "rebalance" in e.message.lower()
            )
            if not transient or time.monotonic() > deadline:
                raise
        time.sleep(0.2)


def _wait(done: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + SETTLE_TIMEOUT
    while not done():
        if time.monotonic() > deadline:
            raise ConnectError(f"timed out after {SETTLE_TIMEOUT:g} s waiting for {what}")
        time.sleep(0.2)


def _safe(error: Exception, source: SourceConnector) -> str:
    return redact_config_values(str(error), source.config)


def report(
    source_url: str,
    target_url: str,
    connectors: Sequence[SourceConnector],
    plans: Sequence[ConnectorPlan],
    results: dict[str, str],
    dry_run: bool,
    as_json: bool,
) -> int:
    """Print the report (a table, then each connector's findings; or JSON); the exit status."""
    words = _WOULD if dry_run else _DONE
    outcomes = {p.name: results.get(p.name, words[p.action]) for p in plans}
    ok = all(
        p.action in ("create", "overwrite", "unchanged")
        and not outcomes[p.name].startswith("failed")
        for p in plans
    )
    if as_json:
        print_json(
            {
                "source": source_url,
                "target": target_url,
                "dry_run": dry_run,
                "connectors": [
                    {
                        "name": p.name,
                        "type": s.type,
                        "source_state": s.state,
                        "state": p.state,
                        "action": p.action,
                        "result": outcomes[p.name],
                        "offsets": p.offsets,
                        "problems": [f.text() for f in p.problems],
                        "warnings": [f.text() for f in p.warnings],
                        "differences": [f.text() for f in p.differences],
                        "config": masked_config(s.config),
                    }
                    for s, p in zip(connectors, plans, strict=True)
                ],
            }
        )
        return 0 if ok else 1
    mode = " (dry run: nothing changed)" if dry_run else ""
    print(f"Import from {source_url} into {target_url}{mode}")
    if not plans:
        print("The source has no connectors")
        return 0
    rows = [
        [p.name, s.type or "", p.state, str(len(p.offsets)), outcomes[p.name]]
        for s, p in zip(connectors, plans, strict=True)
    ]
    print_table(rows, header=["NAME", "TYPE", "STATE", "OFFSETS", "RESULT"])
    for p in plans:
        notes = (
            [("cannot run", f) for f in p.problems]
            + [("differs", f) for f in p.differences]
            + [("note", f) for f in p.warnings]
        )
        if notes:
            print(f"{p.name}:")
            for label, finding in notes:
                print(f"  {label}: {finding.text()}")
    return 0 if ok else 1
