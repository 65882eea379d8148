"""What an exactly-once source task knows it committed, and the check that a re-read of its
offsets shows it.

A task restarted in place after a transaction was lost to the broker
(:mod:`connectrt.runtime.source.transaction_restart`) starts from the offsets it reads back
after the new producer's ``init_transactions()``. That read must show every transaction the
old producer committed: a view missing the last one (offsets topic read short of the commit's
record, or before the broker let it be read) restarts the task from the offset before it, and
the task sends that committed batch again, a duplicate a ``read_committed`` consumer sees.

The runtime knows better than any view what it committed: ``commit_transaction()`` returned.
:class:`KnownCommits` keeps, per offsets key, the encoded value of the last successful commit
that wrote it (``committed``), and the values of a commit whose outcome is unknown because the
broker went away while it was in flight (``in_doubt``: its ``commit_transaction()`` never
returned success, but the coordinator may have recorded it, and then completes it when the next
producer initializes). After a restart, a key's value in the view is right when it is the
committed one or the one in doubt (that commit then went through); anything else is a view
that is not yet complete. :func:`stale_keys` names such keys; the caller reads on. A view
showing the committed value is only complete for a key in doubt once the read went past that
commit's records (the caller reads the topic to its end first when something is in doubt).

Owned by one task's :class:`~connectrt.runtime.source.transactions.TransactionalOffsets`, on
the task's thread only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

__all__ = ["KnownCommits"]


class KnownCommits:
    """The offsets a task's transactions stored, as far as the task knows (module docstring).

    Values are the encoded offset maps as produced to the offsets topic (``None``: a
    tombstone, or nothing stored). Lifecycle: :meth:`sending` before ``commit_transaction()``,
    then :meth:`committed_now` once it returned; a commit that did not return stays in doubt
    until :meth:`settle`, after the view was re-read.
    """

    def __init__(self) -> None:
        self.committed: dict[bytes, bytes | None] = {}
        self.in_doubt: dict[bytes, bytes | None] = {}
        self._sending: dict[bytes, bytes | None] = {}

    def sending(self, entries: Mapping[bytes, bytes | None]) -> None:
        """The offsets produced into the transaction about to be committed."""
        self._sending = dict(entries)

    def committed_now(self) -> None:
        """``commit_transaction()`` returned: what :meth:`sending` noted is committed."""
        self.committed.update(self._sending)
        self._sending = {}
        self.in_doubt = {}

    def lost(self) -> None:
        """The commit of what :meth:`sending` noted did not return (the transaction was lost
        to the broker): it may or may not have been recorded by the coordinator."""
        self.in_doubt.update(self._sending)
        self._sending = {}

    def keys(self) -> list[bytes]:
        """Every key the task committed or may have committed."""
        return list(dict.fromkeys([*self.committed, *self.in_doubt]))

    def stale_keys(
        self, view: Callable[[Iterable[bytes]], Mapping[bytes, bytes | None]]
    ) -> list[bytes]:
        """Keys whose value in ``view`` (an offset store's ``get``) is neither the last
        committed one nor the one in doubt: the view misses a commit the task made."""
        keys = self.keys()
        if not keys:
            return []
        seen = view(keys)
        stale = []
        for key in keys:
            value = seen.get(key)
            if value == self.committed.get(key):
                continue
            if key in self.in_doubt and value == self.in_doubt[key]:
                continue
            stale.append(key)
        return stale

    def settle(self, view: Callable[[Iterable[bytes]], Mapping[bytes, bytes | None]]) -> None:
        """The view was re-read and shows what was committed: its values become the known
        ones (a commit in doubt that went through is now committed; one that did not, gone)."""
        keys = self.keys()
        seen = view(keys) if keys else {}
        self.committed = {key: seen.get(key) for key in keys}
        self.in_doubt = {}
