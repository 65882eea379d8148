"""The transformation chain of a connector: its SMT stages run over each record or batch.

A :class:`TransformationChain` is built per task (from the ``transforms.*``/``predicates.*``
keys, see :mod:`connectrt.transforms.chain_config`) and used from that task's thread only. It
owns its SMT and predicate instances and closes them in :meth:`TransformationChain.close`.

This is the runtime's per-record path: :meth:`TransformationChain.apply_batch` (every record of a
batch, one to one) and :meth:`TransformationChain.apply` (the per-record fallback) run over
pre-bound methods, without attribute lookups in their loops. Validating the config and the
config definition of the stages' keys are in :mod:`connectrt.transforms.chain_validation`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic

from connectrt.api.transform import Predicate, R, Transformation
from connectrt.transforms.chain_config import TransformationStage, build_stages
from connectrt.transforms.chain_validation import enriched_config_def, validate_transforms
from connectrt.transforms.resolver import Resolver, default_resolve

__all__ = [
    "Resolver",
    "TransformationChain",
    "TransformationStage",
    "default_resolve",
    "enriched_config_def",
    "failed_transformation",
    "validate_transforms",
]


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
        # instrument(): the plans with their stages' calls timed, and without (time_stages)
        self._timed: tuple[list[_PlanStep[R]], list[_BatchStep[R]]] | None = None
        self._untimed: tuple[list[_PlanStep[R]], list[_BatchStep[R]]] | None = None
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
            build_stages(config, resolve or default_resolve, self._stages, self._predicates)
        except BaseException:
            self.close()
            raise
        self._plan = _plan_of(self._stages)
        self._batch_plan = _batch_plan_of(self._stages)

    @property
    def stages(self) -> list[TransformationStage[R]]:
        return list(self._stages)

    def __len__(self) -> int:
        return len(self._stages)

    def instrument(self, wrap: Callable[[str, Callable[..., Any]], Callable[..., Any]]) -> None:
        """Make a timed version of each stage's bound calls, ``wrap(alias, call)`` (tracing
        times the stages this way, :mod:`connectrt.runtime.tracing.tracer`), which
        :meth:`time_stages` puts in place and takes away. Call once, before the chain is used;
        until then, and while the timed calls are not in place, the chain runs exactly as
        before."""
        self._untimed = (self._plan, self._batch_plan)
        self._timed = (
            [
                (stage, pred, neg, wrap(stage.alias, apply), wrap(stage.alias, owned))
                for stage, pred, neg, apply, owned in self._plan
            ],
            [
                (stage, pred, neg, wrap(stage.alias, batch))
                for stage, pred, neg, batch in self._batch_plan
            ],
        )

    def time_stages(self, on: bool) -> None:
        """Run the stages through the timed calls :meth:`instrument` made (``on``), or not: a
        tracer times the batches it traces only, so the others pay nothing per record."""
        plans = self._timed if on else self._untimed
        if plans is not None:
            self._plan, self._batch_plan = plans

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
