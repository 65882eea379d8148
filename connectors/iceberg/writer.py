"""TableWriter: one Iceberg table as a task sees it: schema upkeep, buffered rows, commits.

Lifecycle, per task and destination table: created on the first record routed to the table
(loading it, or creating it with ``iceberg.tables.auto-create-enabled``, partitioned as its
partition-by key says: :mod:`connectors.iceberg.partitioning`); :meth:`conform` turns
each Arrow batch of records into the table's shape (evolving the table first with
``iceberg.tables.evolve-schema-enabled``) and :meth:`add` buffers it; :meth:`commit` writes
everything buffered as one Iceberg transaction (an append, or with id columns an upsert) whose
snapshot summary carries the task's Kafka positions (:mod:`connectors.iceberg.offsets`).

Several tasks commit to one table without a coordinator: Iceberg's catalogs commit optimistically
(the SQL catalog swaps the metadata location only if nobody moved it), so a commit that lost a
race raises ``CommitFailedException``; the writer then reloads the table, merges its positions
into the offsets the winner wrote, and tries again (:data:`COMMIT_ATTEMPTS` times). A catalog
database locked by another writer (SQLite) is waited for up to :data:`BUSY_TIMEOUT_S`. Each task
only ever moves its own partitions, so the merged object keeps every task's positions. Before
committing, the writer checks that the table's stored position of each partition it commits is
the one it started from: if another writer moved it (a task that lost the partition in a
rebalance but still committed), committing would duplicate rows, so the commit is refused.

Used on its task's thread only.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.exceptions import CommitFailedException, NoSuchTableError
from pyiceberg.table import Table, TableProperties

from connectors.iceberg.offsets import merged_properties, read_offsets
from connectors.iceberg.partitioning import PartitionTerm, add_partition_fields
from connectrt.api import ConnectError, DataError

__all__ = ["BUSY_TIMEOUT_S", "COMMIT_ATTEMPTS", "TableWriter"]

log = logging.getLogger(__name__)

COMMIT_ATTEMPTS = 20
BUSY_TIMEOUT_S = 60.0  # how long a locked catalog database is waited for
_ROW_INDEX = "__connectrt_row"


def _same(written: pa.DataType, column: pa.DataType) -> bool:
    """True when values of Arrow type ``written`` are stored as ``column`` without a change
    of the table (Iceberg reads strings and binaries back as their large Arrow types)."""
    return written == column or str(written).replace("large_", "") == str(column).replace(
        "large_", ""
    )


def _busy(exc: Exception) -> bool:
    """True for a catalog database that was locked by another writer (SQLite under several
    tasks): the transaction was rolled back, the commit can be tried again."""
    return type(exc).__name__ == "OperationalError" and "locked" in str(exc)


def _committing_once(table: Table) -> Table:
    """``table`` as a transaction target whose commit is attempted once. pyiceberg retries a
    conflicting commit itself, re-adding the snapshot with the summary properties computed
    before the conflict: the offsets another task just committed would be overwritten. The
    override lives in this object only; nothing is written to the table's properties."""
    properties = {**table.metadata.properties, TableProperties.COMMIT_NUM_RETRIES: "0"}
    metadata = table.metadata.model_copy(update={"properties": properties})
    return Table(table.name(), metadata, table.metadata_location, table.io, table.catalog)


class TableWriter:
    """See the module docstring. ``catalog`` is a pyiceberg catalog, ``name`` ``ns.table``."""

    def __init__(
        self,
        catalog: Any,
        name: str,
        *,
        id_columns: tuple[str, ...],
        auto_create: bool,
        evolve: bool,
        group: str,
        partition_by: tuple[PartitionTerm, ...] = (),
        partition_key: str = "",
    ) -> None:
        if "." not in name.strip(".") or ".." in name:
            raise DataError(f"Table name '{name}' is not namespace.table")
        self.name = name
        self._catalog = catalog
        self._id_columns = id_columns
        self._partition_by = partition_by
        self._partition_key = partition_key
        self._auto_create = auto_create
        self._evolve = evolve
        self._group = group
        self._table: Any = None
        self._target: pa.Schema | None = None  # the table's schema as Arrow
        self._batches: list[pa.RecordBatch] = []
        self.stored: dict[tuple[str, int], int] = {}  # positions last seen in the table
        self._loaded_topics: set[str] = set()
        try:
            self._set_table(catalog.load_table(name))
        except NoSuchTableError:
            if not auto_create:
                raise ConnectError(
                    f"Iceberg table {name} does not exist (set "
                    "iceberg.tables.auto-create-enabled=true to create it)"
                ) from None

    # -- table state ----------------------------------------------------------------------------
    def _set_table(self, table: Any) -> None:
        self._table = table
        self._target = table.schema().as_arrow()

    def load_offsets(self, topics: set[str]) -> dict[tuple[str, int], int]:
        """The table's stored positions of ``topics`` (remembered for the commit checks)."""
        self._loaded_topics |= topics
        if self._table is None:
            return {}
        self._set_table(self._table.refresh())  # another task may have committed since
        fresh = read_offsets(self._table, topics, self._group)
        self.stored.update(fresh)
        return fresh

    @property
    def exists(self) -> bool:
        """True once the table exists (loaded, or created for a first record)."""
        return self._table is not None

    @property
    def pending(self) -> int:
        """Rows buffered and not committed yet."""
        return sum(b.num_rows for b in self._batches)

    # -- schema ---------------------------------------------------------------------------------
    def _create(self, schema: pa.Schema) -> None:
        missing = [c for c in self._id_columns if c not in schema.names]
        if missing:
            raise DataError(f"Cannot create table {self.name}: no id column(s) {missing}")
        fields = [f.with_nullable(False) if f.name in self._id_columns else f for f in schema]
        namespace = self.name.rsplit(".", 1)[0]
        try:
            self._catalog.create_namespace_if_not_exists(namespace)
        except Exception:
            # Another task created it between the check and the insert (a unique constraint
            # of the SQL catalog, for instance): fine if it exists now.
            if not self._catalog.namespace_exists(namespace):
                raise
        # prepare() found no table just now; one created by another task since makes the
        # creation commit fail, and _create_table loads that one instead.
        table = self._create_table(pa.schema(fields))
        if self._id_columns and not table.schema().identifier_field_ids:
            with table.update_schema() as update:
                update.set_identifier_fields(*self._id_columns)
        log.info("Using Iceberg table %s: %s", self.name, table.schema())
        self._set_table(table)
        self.load_offsets(set(self._loaded_topics))

    def _create_table(self, schema: pa.Schema) -> Any:
        """Create the table with its partition spec in one catalog commit (or load it when
        another task created it first). ConnectError when the spec does not fit the schema:
        nothing is created then."""
        creation = self._catalog.create_table_transaction(self.name, schema=schema)
        if self._partition_by:
            with creation.update_spec() as update:
                add_partition_fields(
                    update,
                    creation.table_metadata.schema(),
                    self._partition_by,
                    self.name,
                    self._partition_key,
                )
        try:
            creation.commit_transaction()
        except Exception:
            try:  # created concurrently by another task
                return self._catalog.load_table(self.name)
            except NoSuchTableError:
                raise DataError(f"Cannot create table {self.name}") from None
        # The transaction returns a staged table, which cannot be refreshed or scanned.
        return self._catalog.load_table(self.name)

    def _evolve_to(self, schema: pa.Schema) -> None:
        target = self._target
        assert target is not None
        names = set(target.names)
        if all(f.name in names and _same(f.type, target.field(f.name).type) for f in schema):
            return
        # New fields come in as optional columns; existing ones keep their required-ness.
        wanted = pa.schema(
            [
                f.with_nullable(target.field(f.name).nullable if f.name in names else True)
                for f in schema
            ]
        )
        for attempt in range(COMMIT_ATTEMPTS):
            try:
                with self._table.update_schema() as update:
                    update.union_by_name(wanted)
                break
            except CommitFailedException:
                self._set_table(self._table.refresh())
                if attempt == COMMIT_ATTEMPTS - 1:
                    raise
            except ValueError as exc:  # an incompatible change (e.g. string to long)
                raise DataError(f"Cannot evolve table {self.name}: {exc}") from exc
        self._set_table(self._table.refresh())
        log.info("Evolved Iceberg table %s: %s", self.name, self._table.schema())

    def conform(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """``batch`` in the table's columns and types: fields the table lacks are added (with
        evolution) or dropped, columns it lacks are null, types are cast (int to long...).
        Raises DataError when a value does not fit (a null in a required column, a cast that
        loses data); the caller reports the records then."""
        self.prepare(batch.schema)
        return self._project(batch)

    def prepare(self, schema: pa.Schema) -> None:
        """Make the table ready for rows of ``schema``: load it if another task created it
        since, create it (auto-create) or evolve it (with evolution). Raises DataError when
        the table cannot take them."""
        if self._table is None:
            try:
                self._set_table(self._catalog.load_table(self.name))
                self.load_offsets(set(self._loaded_topics))
            except NoSuchTableError:
                self._create(schema)
        elif self._evolve:
            self._evolve_to(schema)

    def _project(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """``batch`` in the table's current columns (see :meth:`conform`)."""
        target = self._target
        assert target is not None
        arrays: list[pa.Array] = []
        for field in target:
            if field.name in batch.schema.names:
                column = batch.column(field.name)
                if column.type != field.type:
                    try:
                        column = column.cast(field.type)
                    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                        raise DataError(
                            f"Column {field.name} of {self.name} is {field.type}; "
                            f"cannot write {column.type} values: {exc}"
                        ) from exc
            else:
                column = pa.nulls(batch.num_rows, field.type)
            if not field.nullable and column.null_count:
                raise DataError(f"Column {field.name} of {self.name} is required: got a null")
            arrays.append(column)
        return pa.RecordBatch.from_arrays(arrays, schema=target)

    def add(self, batch: pa.RecordBatch) -> None:
        """Buffer a conformed batch for the next :meth:`commit`."""
        if batch.num_rows:
            self._batches.append(batch)

    def discard(self) -> None:
        """Forget what is buffered (the records will be consumed again)."""
        self._batches.clear()

    # -- commit ---------------------------------------------------------------------------------
    def _rows(self) -> pa.Table | None:
        if not self._batches:
            return None
        target = self._target
        # Batches buffered before an evolution get the columns added since.
        batches = [b if b.schema == target else self._project(b) for b in self._batches]
        rows = pa.Table.from_batches(batches, schema=target).combine_chunks()
        if self._id_columns and rows.num_rows > 1:
            # Upserts take one row per key: the last one consumed wins.
            indexed = rows.append_column(_ROW_INDEX, pa.array(range(rows.num_rows), pa.int64()))
            last = indexed.group_by(list(self._id_columns)).aggregate([(_ROW_INDEX, "max")])
            keep = last.column(f"{_ROW_INDEX}_max")
            rows = rows.take(keep.take(pc.sort_indices(keep)))
        return rows

    def commit(self, positions: Mapping[tuple[str, int], int]) -> int:
        """Commit the buffered rows with ``positions`` (next offset per (topic, partition)
        the rows cover) as one snapshot; returns the rows written. Retries on a concurrent
        commit; raises ConnectError when a partition was committed by another writer."""
        rows = self._rows()
        if self._table is None:
            if rows is None:
                return 0
            raise ConnectError(f"{self.name}: rows buffered for a table that does not exist")
        topics = {topic for topic, _ in positions}
        races = 0
        busy_until = time.monotonic() + BUSY_TIMEOUT_S
        while True:
            fresh = read_offsets(self._table, topics | self._loaded_topics, self._group)
            moved = {
                tp: o
                for tp, o in fresh.items()
                if tp in positions and o != self.stored.get(tp) and o > self.stored.get(tp, 0)
            }
            if moved:
                # The table is the truth: records below its offsets are skipped from now on.
                self.stored.update(moved)
                raise ConnectError(
                    f"Another writer committed {sorted(moved)} of table {self.name} since "
                    f"this task read {[(tp, self.stored.get(tp)) for tp in sorted(moved)]}; "
                    "not committing; resuming from the table's offsets"
                )
            properties = merged_properties(self._table, positions, self._group)
            target = _committing_once(self._table)
            try:
                with target.transaction() as tx:
                    written = 0
                    if rows is not None and self._id_columns:
                        result = tx.upsert(
                            rows,
                            join_cols=list(self._id_columns),
                            snapshot_properties=properties,
                        )
                        written = result.rows_updated + result.rows_inserted
                    elif rows is not None:
                        tx.append(rows, snapshot_properties=properties)
                        written = rows.num_rows
                    if not written:
                        # Nothing changed (or upserts of unchanged rows): a snapshot without
                        # files still records how far the partitions were consumed.
                        with tx.update_snapshot(snapshot_properties=properties).fast_append():
                            pass
            except CommitFailedException as exc:
                races += 1
                if races >= COMMIT_ATTEMPTS:
                    raise ConnectError(
                        f"Committing to {self.name} lost {races} races in a row: {exc}"
                    ) from exc
                log.info("Commit to %s lost a race (%d): %s", self.name, races, exc)
                time.sleep(random.uniform(0.01, 0.05 * races))
            except Exception as exc:
                if not _busy(exc) or time.monotonic() > busy_until:
                    raise
                log.info("Catalog busy while committing to %s: %s", self.name, exc)
                time.sleep(random.uniform(0.1, 0.5))
            else:
                self._set_table(target)  # its metadata is the committed one, from the catalog
                self.stored.update(positions)
                self._batches.clear()
                return written
            self._set_table(self._table.refresh())
