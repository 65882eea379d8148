"""Avro schemas without their ``logicalType`` attributes (the same binary encoding)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["strip_logical_types"]


def strip_logical_types(avro: Any) -> Any:
    """A copy of ``avro`` without ``logicalType`` attributes (same binary encoding).

    The converter does logical conversions itself (Kafka-compatible), so fastavro is given the
    stripped schema and reads/writes plain ints, longs and bytes.
    """
    if isinstance(avro, list):
        return [strip_logical_types(b) for b in avro]
    if isinstance(avro, Mapping):
        out = {}
        for k, v in avro.items():
            if k == "logicalType":
                continue
            if k in ("type", "items", "values"):
                out[k] = strip_logical_types(v)
            elif k == "fields":
                out[k] = [
                    {fk: strip_logical_types(fv) if fk == "type" else fv for fk, fv in f.items()}
                    for f in v
                ]
            else:
                out[k] = v
        return out
    return avro
