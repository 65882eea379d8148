"""Where a partition resumes: after the last complete file set already in storage.

Each Parquet or Avro object carries the end offset of the set it was written with and how many
files that set has. Sets of one partition are written one after the other, so their start
offsets do not interleave: reading the partition's objects from the highest start offset down,
the first set whose files are all present is the last complete one, and the partition resumes
at its end offset. Files of a later, incomplete set (a crash between two PUTs of one set) are
rewritten under the same names when their records come again. JSON lines carry no marks: such
a sink resumes from the committed consumer offsets, which never pass a written set.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from connectors.objectstore.formats import EXTENSIONS, read_marks
from connectors.objectstore.storage import ObjectStore, StoredObject
from connectrt.api import TopicPartition

log = logging.getLogger(__name__)

__all__ = ["partition_objects", "resume_offset"]


def partition_objects(
    objects: Sequence[StoredObject], tp: TopicPartition, format_name: str
) -> list[tuple[int, str]]:
    """``(start offset, path)`` of the objects of ``tp`` among ``objects``, highest first."""
    pattern = re.compile(
        rf"(?:^|/){re.escape(tp.topic)}\+{tp.partition}\+(\d+)\.{EXTENSIONS[format_name]}$"
    )
    found = []
    for obj in objects:
        match = pattern.search(obj.path)
        if match:
            found.append((int(match.group(1)), obj.path))
    found.sort(reverse=True)
    return found


def resume_offset(
    store: ObjectStore, objects: Sequence[StoredObject], tp: TopicPartition, format_name: str
) -> int | None:
    """The end offset of ``tp``'s last complete set in storage, or None (no such set, or a
    format without marks)."""
    if format_name == "json":
        return None
    seen: dict[int, int] = {}
    for _, path in partition_objects(objects, tp, format_name):
        if format_name == "parquet":
            with store.open_input_file(path) as source:
                marks = read_marks(format_name, source)
        else:
            marks = read_marks(format_name, store.read(path))
        if marks is None:
            log.warning("%s has no set marks; not used to resume %s", path, tp)
            continue
        end, files = marks
        seen[end] = seen.get(end, 0) + 1
        if seen[end] >= files:
            return end
    return None
