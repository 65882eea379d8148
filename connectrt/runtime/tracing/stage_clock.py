"""The stage clock of a tracer: the times of one batch's stages, timed only in traced batches.

Imported with :mod:`connectrt.runtime.tracing.tracer` (only when tracing is on); used on the task
thread only.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

__all__ = ["StageClock"]


class StageClock:
    """The times (epoch nanoseconds) of one batch's stages, by stage name, in first-start order.

    :meth:`wrap` makes a call that, while the clock is :attr:`active`, notes its start and end
    under a name; a stage called more than once in a batch (a transformation record by record, a
    retried ``put``) spans its first start to its last end. The timed calls are put in place
    only while the clock runs (:meth:`time_attribute`, :meth:`time_chain`): :meth:`start` (the
    tracer calls it for a batch it traces) puts them in place, :meth:`reset` returns the batch's
    stages, stops the clock and takes them away, so a batch not traced runs the untimed calls
    (a timed transformation cost 165 ns a record, every record, when it stayed in place). Used
    on the task thread only.
    """

    __slots__ = ("_switches", "active", "stages")

    def __init__(self) -> None:
        self.stages: dict[str, list[int]] = {}
        self.active = False
        self._switches: list[Callable[[bool], None]] = []

    def start(self) -> None:
        """Time the stages from now on, until :meth:`reset`."""
        if not self.active:
            self.active = True
            for switch in self._switches:
                switch(True)

    def reset(self) -> dict[str, list[int]]:
        """The finished batch's stages; the clock starts empty, stopped."""
        stages = self.stages
        self.stages = {}
        if self.active:
            self.active = False
            for switch in self._switches:
                switch(False)
        return stages

    def note(self, name: str, start: int, end: int) -> None:
        times = self.stages.get(name)
        if times is None:
            self.stages[name] = [start, end]
        else:
            times[1] = end

    def wrap(self, name: str, call: Callable[..., Any]) -> Callable[..., Any]:
        """``call``, timed under ``name`` while the clock is active."""
        clock = time.time_ns
        note = self.note

        def timed(*args: Any, **kwargs: Any) -> Any:
            if not self.active:
                return call(*args, **kwargs)
            start = clock()
            try:
                return call(*args, **kwargs)
            finally:
                note(name, start, clock())

        return timed

    def time_attribute(self, owner: Any, name: str, stage: str) -> bool:
        """Time the calls of ``owner.<name>`` (a method) as ``stage`` while the clock runs: the
        timed call is set on ``owner`` when it starts, the untimed one when it resets. False
        (and not timed) when ``owner`` takes no attribute of that name (``__slots__``)."""
        untimed = getattr(owner, name)
        timed = self.wrap(stage, untimed)
        try:
            setattr(owner, name, untimed)
        except AttributeError:
            return False

        def switch(on: bool) -> None:
            setattr(owner, name, timed if on else untimed)

        self._switches.append(switch)
        return True

    def time_chain(self, chain: Any) -> None:
        """Time each transformation of ``chain`` (a
        :class:`~connectrt.transforms.chain.TransformationChain`) as ``transform <alias>`` while
        the clock runs."""
        chain.instrument(lambda alias, call: self.wrap(f"transform {alias}", call))
        self._switches.append(chain.time_stages)
