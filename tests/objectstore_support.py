"""Test support for the object storage sink: an S3-compatible server process, typed records,
and counting what landed in the objects.

:class:`MotoServer` runs moto's S3 server as a separate OS process (``python -m moto.server``)
on a free port; :func:`moto_s3` is the pytest fixture around it (module scope, stopped in
teardown). Records are produced as JsonConverter envelopes with a timestamp, a decimal and a
nested struct, so what Spark or pyarrow reads back shows the typed columns.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pytest
from confluent_kafka import Producer

from connectrt.ports import free_port

ACCESS_KEY = "testing-access-key"
SECRET_KEY = "testing-secret-key"

SCHEMA = {
    "type": "struct",
    "name": "order",
    "optional": False,
    "fields": [
        {"field": "n", "type": "int64", "optional": False},
        {"field": "p", "type": "int32", "optional": False},
        {
            "field": "at",
            "type": "int64",
            "name": "org.apache.kafka.connect.data.Timestamp",
            "version": 1,
            "optional": False,
        },
        {
            "field": "amount",
            "type": "bytes",
            "name": "org.apache.kafka.connect.data.Decimal",
            "version": 1,
            "parameters": {"scale": "2"},
            "optional": False,
        },
        {
            "field": "customer",
            "type": "struct",
            "optional": True,
            "fields": [
                {"field": "name", "type": "string", "optional": False},
                {"field": "tier", "type": "int32", "optional": True},
            ],
        },
    ],
}
T0 = 1_700_000_000_000


class MotoServer:
    """moto's S3-compatible server in its own process."""

    def __init__(self, log_path: Path) -> None:
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._log = log_path.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{self.endpoint}/moto-api/", timeout=2).close()
                break
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"moto server exited: see {log_path}") from None
                if time.monotonic() > deadline:
                    raise RuntimeError("moto server did not answer within 60s") from None
                time.sleep(0.1)

    def filesystem(self) -> pafs.S3FileSystem:
        return pafs.S3FileSystem(
            access_key=ACCESS_KEY,
            secret_key=SECRET_KEY,
            region="us-east-1",
            endpoint_override=f"127.0.0.1:{self.port}",
            scheme="http",
            allow_bucket_creation=True,
            allow_bucket_deletion=True,
        )

    def create_bucket(self, name: str) -> str:
        self.filesystem().create_dir(name)
        return name

    def sink_config(self, bucket: str) -> dict[str, str]:
        return {
            "store.url": self.endpoint,
            "s3.bucket.name": bucket,
            "s3.region": "us-east-1",
            "aws.access.key.id": ACCESS_KEY,
            "aws.secret.access.key": SECRET_KEY,
        }

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        self._log.close()


@pytest.fixture(scope="module")
def moto_s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    server = MotoServer(tmp_path_factory.mktemp("moto") / "moto.log")
    try:
        yield server
    finally:
        server.stop()


def envelope(n: int, partition: int) -> bytes:
    """Record ``n`` as a JsonConverter envelope with SCHEMA (decimal: base64 of the unscaled
    big-endian value, as the converter writes it)."""
    import base64

    cents = n * 7 + 5
    unscaled = cents.to_bytes((cents.bit_length() + 8) // 8, "big", signed=True)
    payload: dict[str, Any] = {
        "n": n,
        "p": partition,
        "at": T0 + n,
        "amount": base64.b64encode(unscaled).decode(),
        "customer": None if n % 5 == 0 else {"name": f"c{n % 17}", "tier": n % 3 or None},
    }
    return json.dumps({"schema": SCHEMA, "payload": payload}).encode()


def produce(bootstrap: str, topic: str, count: int, partitions: int, start: int = 0) -> None:
    """Records ``start`` .. ``start + count - 1``, record n to partition n % partitions."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "acks": "all"})
    for n in range(start, start + count):
        p = n % partitions
        while True:
            try:
                producer.produce(topic, envelope(n, p), partition=p)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(60) == 0


def count_records(fs: pafs.FileSystem, base: str) -> Counter[int]:
    """How many times each record number ``n`` is in the Parquet objects under ``base``."""
    selector = pafs.FileSelector(base, allow_not_found=True, recursive=True)
    paths = [
        info.path
        for info in fs.get_file_info(selector)
        if info.type == pafs.FileType.File and info.path.endswith(".parquet")
    ]
    counts: Counter[int] = Counter()
    if not paths:
        return counts
    table = ds.dataset(paths, filesystem=fs, format="parquet").to_table(columns=["n"])
    counts.update(table.column("n").to_pylist())
    return counts
