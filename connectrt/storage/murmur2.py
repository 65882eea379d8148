"""Java-compatible murmur2 hashing, as used by Kafka's default partitioner.

``murmur2`` gives exactly what ``org.apache.kafka.common.utils.Utils.murmur2`` returns (a signed
32-bit int, seed ``0x9747b28c``), and ``java_partition`` the partition the Java producer (and
librdkafka's ``murmur2_random`` partitioner) picks for a non-null key. Internal topics are
written with that partitioner so that keys land where Java Connect workers would put them.
"""

from __future__ import annotations

__all__ = ["java_partition", "murmur2"]

_MASK = 0xFFFFFFFF
_SEED = 0x9747B28C
_M = 0x5BD1E995
_R = 24


def murmur2(data: bytes) -> int:
    """Return Kafka's murmur2 hash of ``data`` as a signed 32-bit integer."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    nblocks = length // 4
    for i in range(0, nblocks * 4, 4):
        # Little-endian 4-byte block, as in the Java code (byte & 0xff at shifts 0, 8, 16, 24).
        k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24)
        k = (k * _M) & _MASK
        k ^= k >> _R
        k = (k * _M) & _MASK
        h = (h * _M) & _MASK
        h ^= k
    tail = nblocks * 4
    rest = length % 4
    # Java's switch falls through: 3 -> 2 -> 1.
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * _M) & _MASK
    # Java uses unsigned shifts (>>>) here; h is kept unsigned so >> is the same.
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - 0x100000000 if h & 0x80000000 else h


def java_partition(key: bytes, num_partitions: int) -> int:
    """The partition Kafka's default partitioner picks for ``key``: ``toPositive(murmur2) % n``."""
    if num_partitions <= 0:
        raise ValueError(f"num_partitions must be positive, got {num_partitions}")
    return (murmur2(key) & 0x7FFFFFFF) % num_partitions
