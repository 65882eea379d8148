"""Connect Decimals <-> Avro ``decimal`` bytes: big-endian two's-complement unscaled integers.

Byte-exact with :class:`connectrt.data.logical.Decimal` (Kafka's encoding), with a fast path
for the common case of a finite ``Decimal`` that holds at most ``scale`` fractional digits.
"""

from __future__ import annotations

import decimal as _decimal
from collections.abc import Callable
from typing import Any, Final

from connectrt.data import logical
from connectrt.errors import DataError

__all__ = ["EXACT", "decimal_decoder", "decimal_encoder"]

EXACT: Final = _decimal.Context(
    prec=_decimal.MAX_PREC, Emax=_decimal.MAX_EMAX, Emin=_decimal.MIN_EMIN
)
"""Exact decimal arithmetic (no rounding), as :mod:`connectrt.data.logical` uses."""

_Dec: Final = _decimal.Decimal


def decimal_encoder(scale: int) -> Callable[[Any], Any]:
    """``Decimal`` -> unscaled bytes at ``scale`` (as ``Decimal.from_logical``)."""

    def enc_decimal(v: Any) -> Any:
        if type(v) is _Dec and v.is_finite():
            unscaled = v.scaleb(scale, EXACT)
            n = int(unscaled)
            if unscaled != n:  # more digits than the scale: Decimal.unscaled raises
                n = logical.Decimal.unscaled(v, scale)
        else:
            n = logical.Decimal.unscaled(v, scale)
        bits = n.bit_length() if n >= 0 else (~n).bit_length()
        return n.to_bytes(bits // 8 + 1, "big", signed=True)

    return enc_decimal


def decimal_decoder(scale: int) -> Callable[[Any], Any]:
    """Big-endian two's-complement unscaled bytes -> ``Decimal`` (as ``Decimal.to_logical``)."""
    exponent = -scale
    from_bytes = int.from_bytes
    create = EXACT.create_decimal

    def dec_decimal(v: Any) -> Any:
        if not v:
            raise DataError("Invalid bytes for Decimal field")
        return create(from_bytes(v, "big", signed=True)).scaleb(exponent, EXACT)

    return dec_decimal
