"""The transformation chain a connector config describes, and its validation.

Connector keys (Kafka's names)::

    transforms=a,b                      ordered aliases
    transforms.a.type=<class>           required; Kafka class name or Python path
    transforms.a.predicate=p            optional; an alias listed in `predicates`
    transforms.a.negate=true            optional; apply when the predicate does NOT match
    transforms.a.<key>=...              passed to the SMT as `<key>`
    predicates=p
    predicates.p.type=<class>
    predicates.p.<key>=...              passed to the predicate as `<key>`

A :class:`TransformationChain` is built per task and used from that task's thread only. It owns
its SMT and predicate instances and closes them in :meth:`TransformationChain.close`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic

from connectrt.api.config import ConfigDef, ConfigError, ConfigKey, ConfigType, Importance
from connectrt.api.config import parse_type as _parse_type
from connectrt.api.transform import Predicate, R, Transformation

__all__ = [
    "Resolver",
    "TransformationChain",
    "TransformationStage",
    "default_resolve",
    "enriched_config_def",
    "failed_transformation",
    "validate_transforms",
]

TRANSFORMS = "transforms"
PREDICATES = "predicates"
_STAGE_KEYS = frozenset({"type", "predicate", "negate"})

Resolver = Callable[[str], type]
"""Turns a ``*.type`` value into a class; raises (ConfigError, ImportError, ...) if unknown."""


def _bundled_names() -> dict[str, str]:
    from connectrt.transforms import KAFKA_ALIASES

    names = dict(KAFKA_ALIASES)
    for fqcn, path in KAFKA_ALIASES.items():
        names.setdefault(fqcn.rsplit(".", 1)[-1], path)  # "Cast$Value", "TopicNameMatches"
        names.setdefault(path.rsplit(".", 1)[-1], path)  # "CastValue"
    return names


def _import(path: str) -> type:
    if ":" in path:
        module_name, _, attr = path.partition(":")
    else:
        module_name, _, attr = path.rpartition(".")
    if not module_name or not attr:
        raise ImportError(f"not a class path: {path}")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    if not isinstance(obj, type):
        raise ImportError(f"{path} is not a class")
    return obj


def default_resolve(name: str) -> type:
    """Resolve a Kafka SMT/predicate class name, its simple name, or a Python class path."""
    name = name.strip()
    path = _bundled_names().get(name, name)
    try:
        return _import(path)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ConfigError(f"Class {name} could not be found.", None, name) from exc


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return [str(v).strip() for v in value if str(v).strip()]
    return [p.strip() for p in str(value).split(",") if p.strip()]


def _sub_config(config: Mapping[str, Any], prefix: str) -> dict[str, Any]:
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


_PlanStep = tuple[
    TransformationStage[R],
    Predicate[R] | None,
    bool,
    Callable[[R], R | list[R] | None],
    Callable[[R], R | list[R] | None],
]


def _plan_of(stages: Sequence[TransformationStage[R]]) -> list[_PlanStep[R]]:
    """Pre-bound methods per stage, so the per-record loop does no attribute lookups."""
    return [
        (s, s.predicate, s.negate, s.transformation.apply, s.transformation.apply_owned)
        for s in stages
    ]


_BatchStep = tuple[TransformationStage[R], Predicate[R] | None, bool, Callable[[list[R]], bool]]


def _batch_plan_of(stages: Sequence[TransformationStage[R]]) -> list[_BatchStep[R]]:
    return [(s, s.predicate, s.negate, s.transformation.apply_batch_owned) for s in stages]


def _apply_matching(
    stage: TransformationStage[R], predicate: Predicate[R], negate: bool, owned: list[R]
) -> bool:
    """A predicated stage over a batch of owned records: transform those that match."""
    test = predicate.test
    matching = [i for i, r in enumerate(owned) if test(r) != negate]
    if not matching:
        return True
    subset = [owned[i] for i in matching]
    if not stage.transformation.apply_batch_owned(subset):
        return False
    for i, r in zip(matching, subset, strict=True):
        owned[i] = r
    return True


_FAILED_CLASS = "_connectrt_transformation_class"


def _note(exc: Exception, stage: TransformationStage[Any]) -> None:
    cls = type(stage.transformation)
    exc.add_note(f"in transformation {stage.alias!r} ({cls.__name__})")
    try:
        setattr(exc, _FAILED_CLASS, f"{cls.__module__}.{cls.__qualname__}")
    except AttributeError:  # an exception type with __slots__: the caller names the chain
        pass


def failed_transformation(exc: BaseException) -> str | None:
    """The class path of the SMT whose failure ``exc`` is (raised through a chain), if known:
    what the runtime reports as the failing class of the TRANSFORMATION stage."""
    name = getattr(exc, _FAILED_CLASS, None)
    return name if isinstance(name, str) else None


class TransformationChain(Generic[R]):
    """The ordered SMT stages of one connector, built from its config.

    ``TransformationChain(config)`` configures every predicate and SMT (ConfigError naming the
    key on any problem; already-created instances are closed). ``resolve`` turns ``*.type``
    values into classes; the default knows Kafka's class names and Python paths.

    Not thread-safe: build one chain per task and call it from the task thread.
    """

    def __init__(
        self,
        config: Mapping[str, Any] | None = None,
        resolve: Resolver | None = None,
        *,
        stages: Sequence[TransformationStage[R]] | None = None,
    ) -> None:
        self._predicates: list[Predicate[R]] = []
        self._plan: list[_PlanStep[R]] = []
        self._batch_plan: list[_BatchStep[R]] = []
        # Set once a stage was not one to one: apply_batch() then always returns None.
        self._per_record = False
        if stages is not None:
            self._stages: list[TransformationStage[R]] = list(stages)
            self._plan = _plan_of(self._stages)
            self._batch_plan = _batch_plan_of(self._stages)
            return
        self._stages = []
        if config is None:
            return
        try:
            self._build(config, resolve or default_resolve)
        except BaseException:
            self.close()
            raise
        self._plan = _plan_of(self._stages)
        self._batch_plan = _batch_plan_of(self._stages)

    def _build(self, config: Mapping[str, Any], resolve: Resolver) -> None:
        transform_aliases = _as_list(config.get(TRANSFORMS))
        predicate_aliases = _as_list(config.get(PREDICATES))
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
            self._predicates.append(predicate)
            predicates[alias] = predicate
        for alias in transform_aliases:
            prefix = f"{TRANSFORMS}.{alias}."
            predicate_alias = config.get(prefix + "predicate")
            predicate_alias = str(predicate_alias).strip() if predicate_alias else None
            predicate = None
            if predicate_alias is not None:
                if predicate_alias not in predicates:
                    raise ConfigError(_unknown_predicate(predicate_alias), prefix + "predicate")
                predicate = predicates[predicate_alias]
            negate = bool(
                _parse_type(prefix + "negate", config.get(prefix + "negate"), ConfigType.BOOLEAN)
            )
            transformation = _instantiate(config, prefix, resolve, Transformation)
            self._stages.append(
                TransformationStage(alias, transformation, predicate, negate, predicate_alias)
            )

    @property
    def stages(self) -> list[TransformationStage[R]]:
        return list(self._stages)

    def __len__(self) -> int:
        return len(self._stages)

    def apply(self, record: R) -> list[R]:
        """Run ``record`` through every stage; return what comes out (possibly nothing).

        An SMT returning None drops the record; a list fans out, each element continuing
        through the following stages. Exceptions from a stage propagate with a note naming the
        stage alias (the runtime attributes them to the TRANSFORMATION stage). ``record`` itself
        is never changed: once a stage has returned a new record, later stages get it through
        :meth:`~connectrt.api.transform.Transformation.apply_owned` and may update it in place.
        """
        # Fast path: one record moving through the stages (the common case); a fan-out
        # switches to the general path for the remaining stages.
        current = record
        owned = False
        for index, (stage, predicate, negate, apply, apply_owned) in enumerate(self._plan):
            try:
                if predicate is not None and predicate.test(current) == negate:
                    continue
                result = apply_owned(current) if owned else apply(current)
            except Exception as exc:
                _note(exc, stage)
                raise
            if result is current:
                continue
            if result is None:
                return []
            if isinstance(result, list):
                return self._apply_from(result, index + 1)
            current = result
            owned = True
        return [current]

    def apply_batch(self, records: list[R]) -> list[R] | None:
        """The batch fast path: every record of ``records`` through every stage, one to one.

        Returns the transformed records in input order (element ``i`` comes from
        ``records[i]``), or None when the chain does not transform this batch one to one - a
        stage dropped or fanned out a record (from then on this chain always returns None) or
        raised. On None the caller runs the batch through :meth:`apply` record by record,
        which reports a failure against its record. ``records`` is never changed: the chain
        works on copies it owns, so each stage runs through
        :meth:`~connectrt.api.transform.Transformation.apply_batch_owned` without copying again.
        """
        if self._per_record:
            return None
        owned = [r._copy() for r in records]
        for stage, predicate, negate, apply_batch_owned in self._batch_plan:
            try:
                if predicate is None:
                    one_to_one = apply_batch_owned(owned)
                else:
                    one_to_one = _apply_matching(stage, predicate, negate, owned)
            except Exception:
                return None
            if not one_to_one:
                self._per_record = True
                return None
        return owned

    def _apply_from(self, records: list[R], start: int) -> list[R]:
        for stage in self._stages[start:]:
            out: list[R] = []
            for r in records:
                try:
                    if not stage.applies_to(r):
                        out.append(r)
                        continue
                    result = stage.transformation.apply(r)
                except Exception as exc:
                    _note(exc, stage)
                    raise
                if result is None:
                    continue
                if isinstance(result, list):
                    out.extend(result)
                else:
                    out.append(result)
            records = out
            if not records:
                break
        return records

    def close(self) -> None:
        """Close every SMT and predicate once; errors are collected and the first re-raised."""
        first: BaseException | None = None
        closables: list[Transformation[R] | Predicate[R]] = [
            *(s.transformation for s in self._stages),
            *self._predicates,
        ]
        for closable in closables:
            try:
                closable.close()
            except Exception as exc:
                first = first or exc
        self._stages = []
        self._plan = []
        self._batch_plan = []
        self._predicates = []
        if first is not None:
            raise first

    @staticmethod
    def validate(
        config: Mapping[str, Any], resolve: Resolver | None = None
    ) -> dict[str, list[str]]:
        """See :func:`validate_transforms`."""
        return validate_transforms(config, resolve)

    def __repr__(self) -> str:
        return f"TransformationChain({[s.alias for s in self._stages]})"


def _unknown_predicate(alias: str) -> str:
    return f"Predicate alias {alias} is not listed in '{PREDICATES}'"


def _instantiate(config: Mapping[str, Any], prefix: str, resolve: Resolver, base: type) -> Any:
    type_key = prefix + "type"
    class_name = config.get(type_key)
    if class_name is None or not str(class_name).strip():
        raise ConfigError(
            f'Missing required configuration "{type_key}" which has no default value.', type_key
        )
    cls = _resolve(resolve, str(class_name), type_key, base)
    instance = cls()
    try:
        instance.configure(_sub_config(config, prefix))
    except ConfigError as exc:
        instance.close()
        key = prefix + exc.name if exc.name else type_key
        raise ConfigError(f"{key}: {exc}" if key not in str(exc) else str(exc), key) from exc
    except BaseException:
        instance.close()
        raise
    return instance


def _resolve(resolve: Resolver, class_name: str, type_key: str, base: type) -> type:
    try:
        cls = resolve(class_name.strip())
    except ConfigError as exc:
        raise ConfigError(
            f"Invalid value {class_name} for configuration {type_key}: {exc}", type_key
        ) from exc
    except (ImportError, AttributeError, ValueError) as exc:
        raise ConfigError(
            f"Invalid value {class_name} for configuration {type_key}: "
            f"Class {class_name} could not be found.",
            type_key,
        ) from exc
    if not (isinstance(cls, type) and issubclass(cls, base)):
        raise ConfigError(
            f"Invalid value {class_name} for configuration {type_key}: "
            f"{class_name} is not a {base.__name__}",
            type_key,
        )
    return cls


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
    class_name = config.get(type_key)
    if class_name is None or not str(class_name).strip():
        _add(
            errors,
            type_key,
            f'Missing required configuration "{type_key}" which has no default value.',
        )
        return
    try:
        cls = _resolve(resolve, str(class_name), type_key, base)
        instance = cls()
    except ConfigError as exc:
        _add(errors, type_key, str(exc))
        return
    sub = _sub_config(config, prefix)
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
    transform_aliases = _as_list(config.get(TRANSFORMS))
    predicate_aliases = _as_list(config.get(PREDICATES))
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
            _add(errors, prefix + "predicate", _unknown_predicate(str(predicate_alias).strip()))
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
        for alias in dict.fromkeys(_as_list(config.get(section))):
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
            class_name = config.get(prefix + "type")
            if not class_name:
                continue
            try:
                cls = _resolve(resolve, str(class_name), prefix + "type", base)
                plugin_def = cls().config_def()
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
                        i + 3,
                        key.width,
                        key.display_name,
                        tuple(prefix + d for d in key.dependents),
                        key.internal,
                    )
                )
    return ConfigDef(keys)
