"""Checking the transforms/predicates part of a connector config without building a chain
(:func:`validate_transforms`, for the validate endpoint), and the config definition of the
configured SMTs' and predicates' keys (:func:`enriched_config_def`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from connectrt.api.config import ConfigDef, ConfigError, ConfigKey, ConfigType, Importance
from connectrt.api.config import parse_type as _parse_type
from connectrt.api.transform import Predicate, Transformation
from connectrt.transforms.chain_config import (
    PREDICATES,
    TRANSFORMS,
    VERSION,
    alias_list,
    new_plugin,
    plugin_config,
    unknown_predicate,
)
from connectrt.transforms.resolver import Resolver, default_resolve

__all__ = ["enriched_config_def", "validate_transforms"]


def _add(errors: dict[str, list[str]], key: str, message: str) -> None:
    bucket = errors.setdefault(key, [])
    if message not in bucket:
        bucket.append(message)


def _validate_plugin(
    config: Mapping[str, Any],
    prefix: str,
    resolve: Resolver,
    base: type,
    errors: dict[str, list[str]],
) -> None:
    type_key = prefix + "type"
    try:
        instance = new_plugin(config, prefix, resolve, base)
    except ConfigError as exc:
        _add(errors, exc.name or type_key, str(exc))
        return
    sub = plugin_config(config, prefix)
    found = False
    try:
        for key, value in instance.config_def().validate(sub).items():
            for message in value.errors:
                _add(errors, prefix + key, message)
                found = True
        if not found:
            # Cross-key checks live in configure(); run it for the errors it raises.
            try:
                instance.configure(sub)
            except ConfigError as exc:
                _add(errors, prefix + exc.name if exc.name else type_key, str(exc))
    finally:
        try:
            instance.close()
        except Exception:
            pass


def validate_transforms(
    config: Mapping[str, Any], resolve: Resolver | None = None
) -> dict[str, list[str]]:
    """Check the transforms/predicates part of a connector config without building a chain.

    Returns ``{config key: [error, ...]}`` for keys with errors only (empty when valid):
    duplicate aliases, missing or unknown ``*.type``, a class of the wrong kind, a
    ``transforms.<a>.predicate`` not listed in ``predicates``, a non-boolean ``negate`` and
    every SMT/predicate key error (``transforms.<a>.<key>``), including those its
    ``configure`` raises.
    """
    resolve = resolve or default_resolve
    errors: dict[str, list[str]] = {}
    transform_aliases = alias_list(config.get(TRANSFORMS))
    predicate_aliases = alias_list(config.get(PREDICATES))
    for key, aliases in ((TRANSFORMS, transform_aliases), (PREDICATES, predicate_aliases)):
        if len(set(aliases)) != len(aliases):
            _add(
                errors,
                key,
                f"Invalid value {','.join(aliases)} for configuration {key}: "
                "Duplicate alias provided.",
            )
    for alias in dict.fromkeys(predicate_aliases):
        _validate_plugin(config, f"{PREDICATES}.{alias}.", resolve, Predicate, errors)
    for alias in dict.fromkeys(transform_aliases):
        prefix = f"{TRANSFORMS}.{alias}."
        predicate_alias = config.get(prefix + "predicate")
        if predicate_alias and str(predicate_alias).strip() not in predicate_aliases:
            _add(errors, prefix + "predicate", unknown_predicate(str(predicate_alias).strip()))
        try:
            _parse_type(prefix + "negate", config.get(prefix + "negate"), ConfigType.BOOLEAN)
        except ConfigError as exc:
            _add(errors, prefix + "negate", str(exc))
        _validate_plugin(config, prefix, resolve, Transformation, errors)
    return errors


def enriched_config_def(config: Mapping[str, Any], resolve: Resolver | None = None) -> ConfigDef:
    """The stage keys plus every configured SMT's/predicate's keys, prefixed (Kafka's
    ``ConnectorConfig.enrich``), in groups ``Transforms: <alias>`` / ``Predicates: <alias>``.

    Aliases whose class cannot be resolved contribute only their stage keys.
    """
    resolve = resolve or default_resolve
    keys: list[ConfigKey] = []
    sections: Iterable[tuple[str, type]] = ((TRANSFORMS, Transformation), (PREDICATES, Predicate))
    for section, base in sections:
        group_label = "Transforms" if section == TRANSFORMS else "Predicates"
        for alias in dict.fromkeys(alias_list(config.get(section))):
            prefix = f"{section}.{alias}."
            group = f"{group_label}: {alias}"
            keys.append(
                ConfigKey(
                    prefix + "type",
                    ConfigType.CLASS,
                    importance=Importance.HIGH,
                    documentation=f"Class for the '{alias}' {base.__name__.lower()}.",
                    group=group,
                    order_in_group=0,
                )
            )
            if section == TRANSFORMS:
                keys.append(
                    ConfigKey(
                        prefix + "predicate",
                        ConfigType.STRING,
                        None,
                        importance=Importance.MEDIUM,
                        documentation="The alias of a predicate used to determine whether to "
                        "apply this transformation.",
                        group=group,
                        order_in_group=1,
                    )
                )
                keys.append(
                    ConfigKey(
                        prefix + "negate",
                        ConfigType.BOOLEAN,
                        False,
                        importance=Importance.MEDIUM,
                        documentation="Whether the configured predicate should be negated.",
                        group=group,
                        order_in_group=2,
                    )
                )
            keys.append(
                ConfigKey(
                    prefix + VERSION,
                    ConfigType.STRING,
                    None,
                    importance=Importance.LOW,
                    documentation=f"Version of the '{alias}' {base.__name__.lower()}: a "
                    "version, a version range or 'latest' (the default).",
                    group=group,
                    order_in_group=3,
                )
            )
            try:
                plugin_def = new_plugin(config, prefix, resolve, base).config_def()
            except ConfigError:
                continue
            for i, key in enumerate(plugin_def.keys.values()):
                keys.append(
                    ConfigKey(
                        prefix + key.name,
                        key.type,
                        key.default,
                        key.validator,
                        key.importance,
                        key.documentation,
                        group,
                        i + 4,
                        key.width,
                        key.display_name,
                        tuple(prefix + d for d in key.dependents),
                        key.internal,
                    )
                )
    return ConfigDef(keys)
