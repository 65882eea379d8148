"""Parsing the ``transforms.*`` and ``predicates.*`` keys of a connector config into stages.

Connector keys (Kafka's names)::

    transforms=a,b                      ordered aliases
    transforms.a.type=<class>           required; Kafka class name or Python path
    transforms.a.predicate=p            optional; an alias listed in `predicates`
    transforms.a.negate=true            optional; apply when the predicate does NOT match
    transforms.a.plugin.version=2.0     optional; which installed version (KIP-891)
    transforms.a.<key>=...              passed to the SMT as `<key>`
    predicates=p
    predicates.p.type=<class>
    predicates.p.plugin.version=[1,2)   optional; which installed version (KIP-891)
    predicates.p.<key>=...              passed to the predicate as `<key>`

:func:`build_stages` configures every predicate and SMT into :class:`TransformationStage` s
(ConfigError naming the key on any problem), which
:class:`~connectrt.transforms.chain.TransformationChain` runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic

from connectrt.api.config import ConfigError, ConfigType
from connectrt.api.config import parse_type as _parse_type
from connectrt.api.transform import Predicate, R, Transformation
from connectrt.transforms.resolver import Resolver, resolve_class

__all__ = [
    "PREDICATES",
    "TRANSFORMS",
    "VERSION",
    "TransformationStage",
    "alias_list",
    "build_stages",
    "new_plugin",
    "plugin_config",
    "unknown_predicate",
]

TRANSFORMS = "transforms"
PREDICATES = "predicates"
VERSION = "plugin.version"
_STAGE_KEYS = frozenset({"type", "predicate", "negate", VERSION})


def alias_list(value: Any) -> list[str]:
    """The aliases of a ``transforms``/``predicates`` value (a list or comma-separated)."""
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return [str(v).strip() for v in value if str(v).strip()]
    return [p.strip() for p in str(value).split(",") if p.strip()]


def plugin_config(config: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    """The keys under ``prefix`` (``transforms.<alias>.``) without it, minus the stage keys
    (``type``, ``predicate``, ``negate``, ``plugin.version``): the config an SMT or predicate
    gets."""
    n = len(prefix)
    return {
        k[n:]: v for k, v in config.items() if k.startswith(prefix) and k[n:] not in _STAGE_KEYS
    }


@dataclass(frozen=True)
class TransformationStage(Generic[R]):
    """One configured SMT, optionally gated by a predicate."""

    alias: str
    transformation: Transformation[R]
    predicate: Predicate[R] | None = None
    negate: bool = False
    predicate_alias: str | None = None

    def applies_to(self, record: R) -> bool:
        """True when the transformation should run for ``record``."""
        if self.predicate is None:
            return True
        return self.predicate.test(record) != self.negate


def build_stages(
    config: Mapping[str, Any],
    resolve: Resolver,
    stages: list[TransformationStage[R]],
    made_predicates: list[Predicate[R]],
) -> None:
    """Configure the predicates and SMTs ``config`` names, appending each to ``made_predicates``
    or ``stages`` as soon as it is made, so that on an error the caller can close those."""
    transform_aliases = alias_list(config.get(TRANSFORMS))
    predicate_aliases = alias_list(config.get(PREDICATES))
    for key, aliases in ((TRANSFORMS, transform_aliases), (PREDICATES, predicate_aliases)):
        if len(set(aliases)) != len(aliases):
            raise ConfigError(
                f"Invalid value {','.join(aliases)} for configuration {key}: "
                "Duplicate alias provided.",
                key,
                config.get(key),
            )
    predicates: dict[str, Predicate[R]] = {}
    for alias in predicate_aliases:
        prefix = f"{PREDICATES}.{alias}."
        predicate = _instantiate(config, prefix, resolve, Predicate)
        made_predicates.append(predicate)
        predicates[alias] = predicate
    for alias in transform_aliases:
        prefix = f"{TRANSFORMS}.{alias}."
        predicate_alias = config.get(prefix + "predicate")
        predicate_alias = str(predicate_alias).strip() if predicate_alias else None
        predicate = None
        if predicate_alias is not None:
            if predicate_alias not in predicates:
                raise ConfigError(unknown_predicate(predicate_alias), prefix + "predicate")
            predicate = predicates[predicate_alias]
        negate = bool(
            _parse_type(prefix + "negate", config.get(prefix + "negate"), ConfigType.BOOLEAN)
        )
        transformation = _instantiate(config, prefix, resolve, Transformation)
        stages.append(
            TransformationStage(alias, transformation, predicate, negate, predicate_alias)
        )


def unknown_predicate(alias: str) -> str:
    """The error for a ``transforms.<a>.predicate`` not listed in ``predicates``."""
    return f"Predicate alias {alias} is not listed in '{PREDICATES}'"


def new_plugin(config: Mapping[str, Any], prefix: str, resolve: Resolver, base: type) -> Any:
    """A new, unconfigured instance of the class ``<prefix>type`` names, in the version
    ``<prefix>plugin.version`` asks for (the latest by default).

    ConfigError naming the key at fault when the type is missing or blank, or the class is
    unknown, not a ``base``, or not in that version.
    """
    type_key = prefix + "type"
    class_name = config.get(type_key)
    if class_name is None or not str(class_name).strip():
        raise ConfigError(
            f'Missing required configuration "{type_key}" which has no default value.', type_key
        )
    version = config.get(prefix + VERSION)
    cls = resolve_class(
        resolve,
        str(class_name),
        type_key,
        base,
        None if version is None else str(version),
        prefix + VERSION,
    )
    return cls()


def _instantiate(config: Mapping[str, Any], prefix: str, resolve: Resolver, base: type) -> Any:
    type_key = prefix + "type"
    instance = new_plugin(config, prefix, resolve, base)
    try:
        instance.configure(plugin_config(config, prefix))
    except ConfigError as exc:
        instance.close()
        key = prefix + exc.name if exc.name else type_key
        raise ConfigError(f"{key}: {exc}" if key not in str(exc) else str(exc), key) from exc
    except BaseException:
        instance.close()
        raise
    return instance
