"""Reading a worker's ``/metrics`` in tests: :func:`scrape` parses the exposition into samples.

``scrape(http)`` returns a :class:`Samples` map from ``(sample name, frozenset of label
pairs)`` to the value; :meth:`Samples.value` looks one sample up by name and labels (None when
absent) and :meth:`Samples.families` lists the metric families and their types.
"""

from __future__ import annotations

from typing import Any

from prometheus_client.parser import text_string_to_metric_families

__all__ = ["Samples", "scrape"]


class Samples(dict[tuple[str, frozenset[tuple[str, str]]], float]):
    """Samples of one scrape; ``types`` maps each family name to its type."""

    types: dict[str, str]

    def value(self, name: str, **labels: str | int) -> float | None:
        return self.get((name, frozenset((k, str(v)) for k, v in labels.items())))

    def matching(self, name: str, **labels: str | int) -> list[tuple[dict[str, str], float]]:
        """Every sample of ``name`` whose labels include ``labels``."""
        wanted = {(k, str(v)) for k, v in labels.items()}
        return [(dict(lbl), v) for (n, lbl), v in self.items() if n == name and wanted <= lbl]


def scrape(http: Any, path: str = "/metrics") -> Samples:
    """GET ``path`` with ``http`` (an httpx/requests client bound to the worker) and parse it."""
    response = http.get(path)
    if response.status_code != 200:
        raise AssertionError(f"GET {path}: {response.status_code} {response.text[:500]}")
    samples = Samples()
    samples.types = {}
    for family in text_string_to_metric_families(response.text):
        samples.types[family.name] = family.type
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples
