from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from connectrt.storage.murmur2 import java_partition, murmur2

# Kafka's UtilsTest.testMurmur2 vectors (clients/src/test/java/.../utils/UtilsTest.java), plus
# values other Java-compatible ports check against Utils.murmur2 (1..12345) and librdkafka's
# rdmurmur2.c unit test ("kafka").
VECTORS = {
    "21": -973932308,
    "foobar": -790332482,
    "a-little-bit-long-string": -985981536,
    "a-little-bit-longer-string": -1486304829,
    "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    "abc": 479470107,
    "1": -1993445489,
    "12": 126087238,
    "123": -267702483,
    "1234": -1614185708,
    "12345": -1188365604,
    "kafka": -798503068,
}


@pytest.mark.parametrize(("text", "expected"), sorted(VECTORS.items()))
def test_matches_kafka_vectors(text: str, expected: int) -> None:
    assert murmur2(text.encode("utf-8")) == expected


# kafka-python's pure-Python murmur2 test (unsigned 32-bit form of the same hash).
UNSIGNED_VECTORS = [
    (b"", 275646681),
    (b"testing", 2291530147),
    (b"PEACH!", 2546348827),
    (b"Gorz!", 1742407956),
    (b"987654321", 577579727),
    (b"_!!_", 2335345241),
    (b"CRINOID", 3603193626),
]


@pytest.mark.parametrize(("data", "expected"), UNSIGNED_VECTORS)
def test_matches_unsigned_vectors(data: bytes, expected: int) -> None:
    assert murmur2(data) & 0xFFFFFFFF == expected


def test_java_partition_uses_positive_hash() -> None:
    # -973932308 & 0x7fffffff = 1173551340
    assert java_partition(b"21", 25) == 1173551340 % 25
    assert java_partition(b"21", 1) == 0


def test_java_partition_rejects_no_partitions() -> None:
    with pytest.raises(ValueError):
        java_partition(b"k", 0)


@given(st.binary(max_size=64), st.integers(min_value=1, max_value=1000))
def test_results_are_in_range(data: bytes, partitions: int) -> None:
    h = murmur2(data)
    assert -(2**31) <= h < 2**31
    assert 0 <= java_partition(data, partitions) < partitions
