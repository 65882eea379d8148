"""Filter: drop every record. Combine it with a predicate (``transforms.<a>.predicate``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connectrt.api.transform import R
from connectrt.transforms.base import BundledTransformation

__all__ = ["Filter"]


class Filter(BundledTransformation[R]):
    """Drops all records, filtering them from subsequent transformations in the chain.

    Intended to be used conditionally to filter out records matching (or not matching) a
    particular predicate.
    """

    def configure(self, config: Mapping[str, Any]) -> None:
        """Nothing to configure."""

    def apply(self, record: R) -> None:
        return None
