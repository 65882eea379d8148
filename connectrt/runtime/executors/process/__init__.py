"""The processes executor (``task.executor=processes``): each task in an OS process of its own.

Import the parts from their modules: :mod:`.executor` (the worker's side,
:class:`~.executor.ProcessTaskExecutor`), :mod:`.child_main` (the child's entry point). This
package's ``__init__`` stays empty on purpose: a child imports it before it has applied its
memory limit, so it must not pull in the runtime.
"""
