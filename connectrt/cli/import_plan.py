"""What ``connectrt import`` would do with each connector of a Kafka Connect cluster, and why.

Pure decisions, no HTTP: :func:`plan_connector` takes one connector as read from the source
cluster (:class:`SourceConnector`), what the target already has under its name
(:class:`TargetConnector` or None) and what the target can load (:class:`PluginCatalog`), and
returns a :class:`ConnectorPlan`: the action (:data:`ACTIONS`), the problems that keep the
connector from running on the target (blocking), warnings (not blocking) and, for a connector
the target already has, how the two differ.

Secrets: nothing here returns a config value of a secret key (password-like names, by
connectrt's masking rule, :mod:`connectrt.runtime.secrets.masking`): differences name the key
and show values only for keys that are not secret; :func:`masked_config` is the config as a
report may print it.

Threading: every function is pure; the classes are immutable.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from connectrt.runtime.plugins.catalog import BUNDLED_PLUGINS, TYPE_SUFFIXES, simple_names
from connectrt.runtime.redaction import Redactor
from connectrt.runtime.secrets.masking import HIDDEN, is_secret, mask
from connectrt.runtime.secrets.providers import REFERENCE_PATTERN
from connectrt.transforms import KAFKA_PREDICATES, KAFKA_TRANSFORMATIONS

__all__ = [
    "ACTIONS",
    "TARGET_STATES",
    "ConnectorPlan",
    "Finding",
    "PluginCatalog",
    "SourceConnector",
    "TargetConnector",
    "masked_config",
    "offsets_key",
    "plan_connector",
    "plugin_references",
    "provider_references",
    "redact_config_values",
    "target_state_of",
]

ACTIONS = ("create", "unchanged", "differs", "overwrite", "blocked")
"""``create``: not on the target yet; ``unchanged``: the target has the same config and
offsets; ``differs``: the target has it with another config or other offsets, left alone (no
``--overwrite``); ``overwrite``: the same, replaced (``--overwrite``); ``blocked``: cannot run
on the target (see the plan's problems), not imported."""

TARGET_STATES = ("RUNNING", "PAUSED", "STOPPED")

# The plugin kinds a config names, by the kind names /connector-plugins uses.
_CONFIG_KINDS = frozenset(TYPE_SUFFIXES) - {"configprovider"}
_CONNECTOR_KINDS = frozenset({"source", "sink"})
_CONVERTER_KINDS = frozenset({"converter"})
# A header converter may be any Converter that is also a HeaderConverter (StringConverter is).
_HEADER_CONVERTER_KINDS = frozenset({"header_converter", "converter"})
_TRANSFORM_KINDS = frozenset({"transformation"})
_PREDICATE_KINDS = frozenset({"predicate"})


@dataclass(frozen=True)
class Finding:
    """One thing the report says about a connector: ``key`` is the config key concerned
    (``None`` for the connector as a whole)."""

    key: str | None
    message: str

    def text(self) -> str:
        return f"{self.key}: {self.message}" if self.key else self.message


@dataclass(frozen=True)
class SourceConnector:
    """A connector as the source cluster shows it: its config as written (``${...}``
    references unresolved), its state (``RUNNING``/``PAUSED``/``STOPPED``/``FAILED``/...) and
    its KIP-875 offsets (``None`` when they could not be read: ``offsets_error`` says why)."""

    name: str
    config: Mapping[str, str]
    state: str
    offsets: Sequence[Mapping[str, Any]] | None
    offsets_error: str | None = None
    type: str | None = None


@dataclass(frozen=True)
class TargetConnector:
    """A connector of the same name on the target: its config (secret values may show as
    ``[hidden]``), state and offsets (``None`` if unreadable)."""

    config: Mapping[str, str]
    state: str
    offsets: Sequence[Mapping[str, Any]] | None


@dataclass(frozen=True)
class ConnectorPlan:
    """What happens to one connector. ``state`` is the target state it gets on the target;
    ``offsets`` those written there (entries with a null offset left out)."""

    name: str
    action: str
    state: str
    offsets: list[dict[str, Any]]
    problems: list[Finding] = field(default_factory=list)
    warnings: list[Finding] = field(default_factory=list)
    differences: list[Finding] = field(default_factory=list)


class PluginCatalog:
    """The plugin names the target can load: every class its ``GET /connector-plugins?
    connectorsOnly=false`` lists, under the aliases a connectrt worker accepts (the class name,
    its simple name, the simple name without its type suffix), plus connectrt's own mapping of
    Kafka Connect class names to its bundled plugins (their Python paths too). Immutable."""

    def __init__(self, listing: Iterable[Mapping[str, Any]]) -> None:
        kinds: dict[str, set[str]] = {}

        def add(name: str, kind: str) -> None:
            # (as the target's registry accepts FileStreamSource for FileStreamSourceConnector)
            names = {name, name.replace(":", ".")} | simple_names(name, kind)
            for n in names:
                kinds.setdefault(n, set()).add(kind)

        self.listed = sorted({str(p.get("class")) for p in listing if p.get("class")})
        for p in listing:
            if p.get("class") and p.get("type"):
                add(str(p["class"]), str(p["type"]))
        # connectrt's alias mapping: its bundled plugins by Kafka class name and Python path.
        for python_path, kafka_name, kind in BUNDLED_PLUGINS:
            if kind in _CONFIG_KINDS and kafka_name in kinds:
                add(python_path, kind)
        for kafka_name, python_path in KAFKA_TRANSFORMATIONS.items():
            if kafka_name in kinds:
                add(python_path, "transformation")
        for kafka_name, python_path in KAFKA_PREDICATES.items():
            if kafka_name in kinds:
                add(python_path, "predicate")
        self._kinds = kinds

    def kinds_of(self, name: str) -> set[str]:
        """The plugin kinds the target has under ``name`` (empty: unknown)."""
        return set(self._kinds.get(name.strip(), ()))

    def has(self, name: str, kinds: Iterable[str]) -> bool:
        return bool(self.kinds_of(name) & set(kinds))


def plugin_references(config: Mapping[str, str]) -> list[tuple[str, str, frozenset[str], str]]:
    """The plugins ``config`` names: ``(key, class name, acceptable kinds, what it is)``, for
    the connector class, the converters, each transformation and each predicate in use."""
    out: list[tuple[str, str, frozenset[str], str]] = []
    if config.get("connector.class"):
        out.append(
            ("connector.class", config["connector.class"], _CONNECTOR_KINDS, "connector class")
        )
    for key, kinds, what in (
        ("key.converter", _CONVERTER_KINDS, "converter"),
        ("value.converter", _CONVERTER_KINDS, "converter"),
        ("header.converter", _HEADER_CONVERTER_KINDS, "header converter"),
    ):
        if config.get(key):
            out.append((key, config[key], kinds, what))
    for group, kinds, what in (
        ("transforms", _TRANSFORM_KINDS, "transformation (SMT)"),
        ("predicates", _PREDICATE_KINDS, "predicate"),
    ):
        for alias in _aliases(config.get(group)):
            key = f"{group}.{alias}.type"
            if config.get(key):
                out.append((key, config[key], kinds, what))
    return out


def provider_references(config: Mapping[str, str]) -> dict[str, list[str]]:
    """The config providers ``config`` refers to (``${provider:[path:]key}``), each with the
    keys whose values refer to it, in key order."""
    out: dict[str, list[str]] = {}
    for key in sorted(config):
        value = config[key]
        if not isinstance(value, str):
            continue
        for m in REFERENCE_PATTERN.finditer(value):
            keys = out.setdefault(m.group(1), [])
            if key not in keys:
                keys.append(key)
    return out


def target_state_of(source_state: str) -> tuple[str, Finding | None]:
    """The target state a connector gets from its state on the source, and a warning when that
    state is not a target state (a FAILED or UNASSIGNED connector is imported RUNNING, which is
    what Kafka Connect keeps trying to do with it)."""
    state = source_state.upper()
    if state in TARGET_STATES:
        return state, None
    return "RUNNING", Finding(None, f"is {state} on the source; imported with target state RUNNING")


def offsets_key(offsets: Iterable[Mapping[str, Any]] | None) -> list[str]:
    """Offsets in a comparable form: one sorted JSON text per partition with an offset."""
    return sorted(
        json.dumps({"partition": o.get("partition"), "offset": o.get("offset")}, sort_keys=True)
        for o in offsets or ()
        if o.get("offset") is not None
    )


def masked_config(config: Mapping[str, str]) -> dict[str, str]:
    """``config`` as a report may print it: secret values ``[hidden]`` (a lone ``${...}``
    reference is kept: it names where the secret lives and holds none)."""
    return {k: v if v is not None else "" for k, v in mask(dict(config)).items()}


def redact_config_values(text: str, config: Mapping[str, str]) -> str:
    """``text`` (a server's message) with the values of ``config``'s secret keys hidden."""
    redactor = Redactor()
    redactor.register_all(v for k, v in config.items() if v and is_secret(k))
    return redactor.redact(text)


def plan_connector(
    source: SourceConnector,
    existing: TargetConnector | None,
    catalog: PluginCatalog,
    *,
    providers: Iterable[str] | None = None,
    overwrite: bool = False,
    validation_errors: Iterable[Finding] = (),
) -> ConnectorPlan:
    """The plan for ``source`` on a target that has ``existing`` under its name (None: none)
    and can load what ``catalog`` lists. ``providers``: the config provider names the target's
    workers configure (None: unknown, then each provider referred to is a warning to check).
    ``validation_errors``: the target's validation of the config, as findings (blocking)."""
    state, state_warning = target_state_of(source.state)
    offsets = [
        {"partition": dict(o["partition"]), "offset": dict(o["offset"])}
        for o in source.offsets or ()
        if o.get("offset") is not None and o.get("partition") is not None
    ]
    problems: list[Finding] = []
    warnings: list[Finding] = [state_warning] if state_warning else []

    for key, name, kinds, what in plugin_references(source.config):
        if not catalog.has(name, kinds):
            found = catalog.kinds_of(name)
            why = (
                f"the target has {name} as a {' and '.join(sorted(found))}, not as a {what}"
                if found
                else f"{what} {name} is not installed on the target and connectrt has no "
                "plugin of that name"
            )
            problems.append(Finding(key, why))
    for alias in _aliases(source.config.get("transforms")):
        if not source.config.get(f"transforms.{alias}.type"):
            problems.append(Finding(f"transforms.{alias}.type", "missing"))
        predicate = source.config.get(f"transforms.{alias}.predicate")
        if predicate and predicate not in _aliases(source.config.get("predicates")):
            problems.append(
                Finding(
                    f"transforms.{alias}.predicate",
                    f"names predicate {predicate}, which 'predicates' does not list",
                )
            )
    known_providers = None if providers is None else set(providers)
    for provider, keys in provider_references(source.config).items():
        where = ", ".join(keys)
        if known_providers is None:
            warnings.append(
                Finding(
                    None,
                    f"refers to config provider '{provider}' (in {where}); the target's workers "
                    f"must configure config.providers.{provider}.class (connectrt ships "
                    "FileConfigProvider, DirectoryConfigProvider and EnvVarConfigProvider); "
                    "the reference is copied as written, never resolved",
                )
            )
        elif provider not in known_providers:
            problems.append(
                Finding(
                    None,
                    f"refers to config provider '{provider}' (in {where}), which the target's "
                    "workers do not configure (--provider): the reference would stay "
                    "unresolved",
                )
            )
    if source.offsets is None:
        problems.append(
            Finding(
                None,
                "its offsets could not be read from the source"
                + (f" ({source.offsets_error})" if source.offsets_error else "")
                + "; importing it without them would start it from scratch",
            )
        )
    problems.extend(validation_errors)

    differences = [] if existing is None else _differences(source, offsets, existing)
    if problems:
        action = "blocked"
    elif existing is None:
        action = "create"
    elif not differences:
        action = "unchanged"
        if existing.state != state:
            warnings.append(
                Finding(
                    None,
                    f"is {existing.state} on the target and {source.state} on the source; "
                    "the target's state is left as it is",
                )
            )
    else:
        action = "overwrite" if overwrite else "differs"
    return ConnectorPlan(source.name, action, state, offsets, problems, warnings, differences)


def _differences(
    source: SourceConnector, offsets: list[dict[str, Any]], existing: TargetConnector
) -> list[Finding]:
    """How the target's connector differs from the source's in config and offsets. A value the
    target shows as ``[hidden]`` cannot be compared and counts as the same."""
    out: list[Finding] = []
    for key in sorted(set(source.config) | set(existing.config)):
        ours, theirs = existing.config.get(key), source.config.get(key)
        if ours == theirs or (ours == HIDDEN and theirs is not None):
            continue
        if is_secret(key):
            out.append(Finding(key, "differs (a secret: values not shown)"))
            continue
        shown = masked_config({k: v for k, v in (("t", ours), ("s", theirs)) if v is not None})
        ours, theirs = shown.get("t"), shown.get("s")  # URL passwords hidden
        if ours is None:
            out.append(Finding(key, f"not set on the target; {theirs!r} on the source"))
        elif theirs is None:
            out.append(Finding(key, f"{ours!r} on the target; not set on the source"))
        else:
            out.append(Finding(key, f"{ours!r} on the target; {theirs!r} on the source"))
    if existing.offsets is None:
        out.append(Finding(None, "offsets could not be read from the target"))
    elif offsets_key(existing.offsets) != offsets_key(offsets):
        out.append(
            Finding(
                None,
                f"offsets differ: {len(offsets_key(existing.offsets))} partition(s) on the "
                f"target, {len(offsets)} on the source, not the same positions",
            )
        )
    return out


def _aliases(value: str | None) -> list[str]:
    return [a.strip() for a in (value or "").split(",") if a.strip()]
