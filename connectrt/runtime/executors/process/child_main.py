"""The entry point of a task process: ``python -m connectrt.runtime.executors.process.child_main``.

Arguments: ``--fd`` (the child's end of the channel, inherited), ``--parent-pid`` (the worker)
and ``--memory-limit-mb``. The order matters and is why this module imports only the standard
library and the light modules beside it:

1. arm the lifeline (``PR_SET_PDEATHSIG``, check the parent is still the worker, ignore
   SIGINT/SIGTERM; :mod:`.lifeline`);
2. apply the memory limit (:mod:`.memory_limit`), before the runtime and the task's
   libraries are imported, so everything they allocate counts;
3. start the link's reader (:mod:`.child_link`): from here on the worker's death ends the
   process;
4. wait for the payload, then import the runtime and run the task (:mod:`.child_task`).

Whatever happens, the process ends with ``os._exit`` once the task has reported ``done``: the
runner has closed the task's clients, and interpreter teardown would only add time.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence

from connectrt.runtime.executors.process.channel import Channel, ChannelClosed
from connectrt.runtime.executors.process.child_link import ChildLink
from connectrt.runtime.executors.process.lifeline import EXIT_SETUP_FAILED, die_with_parent
from connectrt.runtime.executors.process.memory_limit import (
    apply_memory_limit,
    caused_by_memory_error,
)

__all__ = ["main"]

_PAYLOAD_TIMEOUT_S = 60.0


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="connectrt-task-process")
    parser.add_argument("--fd", type=int, required=True)
    parser.add_argument("--parent-pid", type=int, required=True)
    parser.add_argument("--memory-limit-mb", type=int, default=0)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = _parse(argv)
    die_with_parent(args.parent_pid)
    apply_memory_limit(args.memory_limit_mb)
    link = ChildLink(Channel.from_fd(args.fd))
    code = EXIT_SETUP_FAILED
    try:
        payload = link.wait_payload(_PAYLOAD_TIMEOUT_S)
        from connectrt.runtime.executors.process.child_task import run_child_task

        code = run_child_task(payload, link)
    except BaseException as e:  # the runtime could not be imported or the task not started
        trace = traceback.format_exc()
        if args.memory_limit_mb > 0 and caused_by_memory_error(e):
            trace = (
                f"The task process (pid {os.getpid()}) exceeded its memory limit "
                f"(task.memory.limit.mb={args.memory_limit_mb}) while starting.\n\n{trace}"
            )
        try:
            link.channel.send(("status", "FAILED", trace))
            link.channel.send(("done", True))
            code = 0
        except ChannelClosed:
            pass
        sys.stderr.write(trace)
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
            if "logging" in sys.modules:
                sys.modules["logging"].shutdown()
        finally:
            link.close()
            os._exit(code)


if __name__ == "__main__":
    main()
