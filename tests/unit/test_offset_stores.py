from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from connectrt.errors import ConnectError
from connectrt.storage.offset_codec import encode_key, encode_value
from connectrt.storage.offsets import FileOffsetStore, MemoryOffsetStore, OffsetStore

K1 = encode_key("src", {"filename": "a.txt"})
K2 = encode_key("src", {"filename": "b.txt"})
V1 = encode_value({"position": 1})
V2 = encode_value({"position": 2})
assert V1 is not None and V2 is not None


@pytest.fixture(params=["memory", "file"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[OffsetStore]:
    s: OffsetStore
    s = MemoryOffsetStore() if request.param == "memory" else FileOffsetStore(tmp_path / "o.json")
    s.start()
    yield s
    s.stop()


def test_implements_protocol(store: OffsetStore) -> None:
    assert isinstance(store, OffsetStore)


def test_set_get_all(store: OffsetStore) -> None:
    store.set({K1: V1, K2: V2})
    assert store.get([K1, K2]) == {K1: V1, K2: V2}
    assert store.all() == {K1: V1, K2: V2}


def test_missing_keys_map_to_none(store: OffsetStore) -> None:
    store.set({K1: V1})
    assert store.get([K1, K2]) == {K1: V1, K2: None}


def test_none_deletes(store: OffsetStore) -> None:
    store.set({K1: V1, K2: V2})
    store.set({K1: None})
    assert store.get([K1]) == {K1: None}
    assert store.all() == {K2: V2}


def test_overwrite(store: OffsetStore) -> None:
    store.set({K1: V1})
    store.set({K1: V2})
    assert store.get([K1]) == {K1: V2}


def test_all_is_a_snapshot(store: OffsetStore) -> None:
    store.set({K1: V1})
    snapshot = store.all()
    store.set({K2: V2})
    assert snapshot == {K1: V1}


def test_rejects_non_bytes(store: OffsetStore) -> None:
    with pytest.raises(ConnectError):
        store.set({"k": V1})  # type: ignore[dict-item]
    with pytest.raises(ConnectError):
        store.set({K1: "v"})  # type: ignore[dict-item]


def test_concurrent_sets_from_threads(store: OffsetStore) -> None:
    def worker(n: int) -> None:
        for i in range(20):
            store.set({f"k-{n}-{i}".encode(): f"{i}".encode()})

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    snapshot = store.all()
    assert len(snapshot) == 80
    assert snapshot[b"k-3-19"] == b"19"


# -- file store specifics ---------------------------------------------------------------------


def _reopen(path: Path) -> FileOffsetStore:
    s = FileOffsetStore(path)
    s.start()
    return s


def test_file_store_survives_reopen(tmp_path: Path) -> None:
    path = tmp_path / "offsets.json"
    binary_key, binary_value = b"\xff\x00key", b"\x80value"
    first = _reopen(path)
    first.set({K1: V1, K2: V2, binary_key: binary_value})
    first.set({K2: None})
    first.stop()
    second = _reopen(path)
    assert second.all() == {K1: V1, binary_key: binary_value}


def test_file_is_readable_json(tmp_path: Path) -> None:
    path = tmp_path / "offsets.json"
    _reopen(path).set({K1: V1})
    doc = json.loads(path.read_text("utf-8"))
    assert doc == {
        "version": 1,
        "entries": [{"key": '["src",{"filename":"a.txt"}]', "value": '{"position":1}'}],
    }


def test_atomic_replace_leaves_no_temp_files(tmp_path: Path) -> None:
    path = tmp_path / "offsets.json"
    s = _reopen(path)
    for i in range(5):
        s.set({K1: str(i).encode()})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["offsets.json"]


def test_failed_write_keeps_state_and_raises(tmp_path: Path) -> None:
    path = tmp_path / "offsets.json"
    s = _reopen(path)
    s.set({K1: V1})
    path.unlink()
    path.mkdir()  # os.replace onto a directory fails
    with pytest.raises(ConnectError, match=re.escape(str(path))):
        s.set({K2: V2})
    assert s.all() == {K1: V1}
    assert [p.name for p in tmp_path.iterdir()] == ["offsets.json"]


def test_missing_file_starts_empty_and_creates_parent(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "dir" / "offsets.json"
    s = _reopen(path)
    assert s.all() == {}
    s.set({K1: V1})
    assert path.exists()


@pytest.mark.parametrize(
    "content",
    [b"{not json", b"[]", b'{"version": 99, "entries": []}', b'{"version": 1, "entries": [{}]}'],
)
def test_corrupt_file_error_names_the_file(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "broken-offsets.json"
    path.write_bytes(content)
    with pytest.raises(ConnectError, match=re.escape(str(path))):
        FileOffsetStore(path).start()


def test_file_store_not_started(tmp_path: Path) -> None:
    with pytest.raises(ConnectError, match="not started"):
        FileOffsetStore(tmp_path / "o.json").get([K1])
