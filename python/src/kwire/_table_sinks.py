"""Exactly-once table sinks for streaming queries: Delta Lake (delta-rs, the
``deltalake`` package), Apache Iceberg (``pyiceberg``) and a helper for any
other transactional store (``TransactionalSink``).

Each batch is committed to the table together with the query's id and the
batch id, so that the replay of a batch that was committed before a crash
(the table has it, the checkpoint's ``commits/N`` does not) writes nothing:

- Delta: the commit carries a transaction action (``txn``) with app id = the
  query id and version = the batch id (Spark's ``txnAppId`` / ``txnVersion``
  idempotent writes). delta-rs does not refuse a repeated (app id, version),
  so the sink reads the table's version for the app id before its first
  batch (and again after a failed one); the query's locked checkpoint makes
  this process the query's only writer in between.
- Iceberg: the snapshot's summary carries ``kwire.query-id`` and
  ``kwire.batch-id`` (as Kafka Connect's and Flink's Iceberg sinks keep their
  position in snapshot properties); the sink reads them back from the
  table's snapshots.

A batch id at or below the table's last for the query is skipped (with a
warning) when it is that very batch; a lower one means the checkpoint is
behind the table (an older copy of it) and raises ``KwireError``.
"""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Dict, Mapping, Optional, Sequence

import pyarrow as pa

from .errors import ConfigError, KwireError


@dataclass(frozen=True)
class BatchInfo:
    """What a ``TransactionalSink`` callback is told about a batch."""

    query_id: str  # the checkpoint's query id (its ``metadata`` file)
    batch_id: int
    end_offsets: Dict[str, Dict[str, int]]  # topic -> partition -> next offset, as offsets/N


def _read_end_offsets(checkpoint: str, batch_id: int) -> Dict[str, Dict[str, int]]:
    # offsets/N: "v1", the batch's metadata, then one line per source (kwire
    # queries have one): its offsets JSON.
    path = os.path.join(checkpoint, "offsets", str(batch_id))
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    return json.loads(lines[2]) if len(lines) > 2 else {}


class _QuerySink:
    """A sink that learns the query's id (and checkpoint) from the streaming
    query before its first batch."""

    query_id: Optional[str] = None
    checkpoint: Optional[str] = None

    def bind(self, query_id: str, checkpoint: str) -> None:
        self.query_id = query_id
        self.checkpoint = checkpoint

    def _require_query(self) -> str:
        if not self.query_id:
            raise ConfigError(
                "kwire: %s needs a streaming query with a checkpoint (its id names the writes)" % type(self).__name__
            )
        return self.query_id


_UNREAD = object()


class _TableSink(_QuerySink):
    """A table that holds the query's last batch id with its rows. The id is
    read at the first batch and again after a failed one; in between this
    process is the query's only writer (its checkpoint is locked)."""

    _table: Any = None  # the library's table object, kept open between batches
    _last: Any = _UNREAD

    def last_batch(self) -> Optional[int]:  # pragma: no cover
        raise NotImplementedError

    def _where(self) -> str:  # pragma: no cover
        raise NotImplementedError

    def _append(self, table: pa.Table, query_id: str, batch_id: int) -> None:  # pragma: no cover
        raise NotImplementedError

    def write(self, table: pa.Table, batch_id: int) -> int:
        query_id = self._require_query()
        try:
            if self._last is _UNREAD:
                self._last = self.last_batch()
            if not self._skip_or_refuse(self._last, batch_id):
                self._append(table, query_id, batch_id)
                self._last = batch_id
        except BaseException:
            self._last = _UNREAD  # read the table again before the next batch
            self._table = None
            raise
        return table.num_rows

    def _skip_or_refuse(self, last: Optional[int], batch_id: int) -> bool:
        """True when the batch is already in the table (then nothing is written)."""
        if last is None or batch_id > last:
            return False
        if batch_id == last:
            self.batches_skipped += 1
            warnings.warn(
                "kwire: batch %d was committed to %s before the query stopped; its rows are not written again"
                % (batch_id, self._where()),
                stacklevel=3,
            )
            return True
        raise KwireError(
            "kwire: the checkpoint's batch %d is below the last batch this query committed to %s (batch %d): the "
            "checkpoint is behind its output, e.g. an older copy of it; refusing to write rows twice"
            % (batch_id, self._where(), last)
        )


class DeltaSink(_TableSink):
    """Appends each batch to a Delta table (created by the first batch) in
    one commit whose transaction action is (app id = query id, version =
    batch id): exactly once across crashes. ``partition_by``: column names
    (e.g. an event date), as ``DataFrameWriter.partitionBy``.
    ``storage_options``: delta-rs's (object stores)."""

    def __init__(
        self,
        path: str,
        *,
        partition_by: Optional[Sequence[str]] = None,
        storage_options: Optional[Mapping[str, str]] = None,
    ):
        import deltalake  # noqa: F401  (a clear ImportError now, not at the first batch)

        self.path = path if "://" in path else os.path.abspath(path)
        self.partition_by = list(partition_by) if partition_by else None
        self.storage_options = dict(storage_options) if storage_options else None
        self.batches_skipped = 0

    def _open(self):
        from deltalake import DeltaTable
        from deltalake.exceptions import TableNotFoundError

        if self._table is not None:
            self._table.update_incremental()
            return self._table
        try:
            self._table = DeltaTable(self.path, storage_options=self.storage_options)
        except TableNotFoundError:
            return None
        return self._table

    def last_batch(self) -> Optional[int]:
        """The last batch id the query committed to the table (None: none)."""
        table = self._open()
        return None if table is None else table.transaction_version(self._require_query())

    def _where(self) -> str:
        return "Delta table %s" % self.path

    def _append(self, table: pa.Table, query_id: str, batch_id: int) -> None:
        from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

        write_deltalake(
            self._table if self._table is not None else self.path,
            table,
            mode="append",
            partition_by=self.partition_by,
            storage_options=self.storage_options,
            commit_properties=CommitProperties(app_transactions=[Transaction(query_id, batch_id)]),
        )
        if self._table is None:
            # The first write created the table: open it once, so that the
            # next writes (which keep it up to date) do not read the whole log
            # again each time.
            self._table = DeltaTable(self.path, storage_options=self.storage_options)

    def description(self) -> str:
        return "DeltaSink[%s]" % self.path


class IcebergSink(_TableSink):
    """Appends each batch to an Iceberg table (created from the first batch's
    schema, with identity partitions on ``partition_by``) as one snapshot whose
    summary names the query and the batch: exactly once across crashes.

    ``catalog``: a pyiceberg Catalog, or the properties of one for
    ``pyiceberg.catalog.load_catalog`` (e.g. ``{"type": "sql", "uri":
    "sqlite:////data/catalog.db", "warehouse": "file:///data/warehouse"}``).
    ``table``: "namespace.name" (the namespace is created when missing)."""

    QUERY_ID = "kwire.query-id"
    BATCH_ID = "kwire.batch-id"

    def __init__(
        self,
        table: str,
        catalog: Any,
        *,
        partition_by: Optional[Sequence[str]] = None,
        catalog_name: str = "kwire",
    ):
        if "." not in table:
            raise ConfigError("kwire: IcebergSink table must be 'namespace.name', not %r" % table)
        if isinstance(catalog, Mapping):
            from pyiceberg.catalog import load_catalog

            catalog = load_catalog(catalog_name, **dict(catalog))
        self.catalog = catalog
        self.identifier = table
        self.partition_by = list(partition_by) if partition_by else []
        self.batches_skipped = 0

    def _load(self, schema: Optional[pa.Schema]):
        from pyiceberg.exceptions import NoSuchTableError

        if self._table is not None:
            self._table.refresh()
            return self._table
        try:
            self._table = self.catalog.load_table(self.identifier)
        except NoSuchTableError:
            if schema is None:
                return None
            self.catalog.create_namespace_if_not_exists(self.identifier.rsplit(".", 1)[0])
            self._table = self.catalog.create_table_if_not_exists(self.identifier, schema=schema)
            if self.partition_by:
                from pyiceberg.transforms import IdentityTransform

                with self._table.update_spec() as spec:
                    for name in self.partition_by:
                        spec.add_field(name, IdentityTransform(), name)
        return self._table

    def last_batch(self) -> Optional[int]:
        """The last batch id the query committed to the table (None: none)."""
        table = self._load(None)
        if table is None:
            return None
        query_id = self._require_query()
        last = None
        for snapshot in table.metadata.snapshots:
            summary = snapshot.summary
            if summary is None or summary.get(self.QUERY_ID) != query_id:
                continue
            batch = int(summary.get(self.BATCH_ID))
            last = batch if last is None else max(last, batch)
        return last

    def _where(self) -> str:
        return "Iceberg table %s" % self.identifier

    def _append(self, table: pa.Table, query_id: str, batch_id: int) -> None:
        if table.num_rows:
            target = self._table if self._table is not None else self._load(table.schema)
            target.append(table, snapshot_properties={self.QUERY_ID: query_id, self.BATCH_ID: str(batch_id)})

    def description(self) -> str:
        return "IcebergSink[%s]" % self.identifier


class TransactionalSink(_QuerySink):
    """Hands each batch to ``write(table, info)`` with a ``BatchInfo``
    (query id, batch id, end offsets), for a store with transactions of its
    own. To be exactly once, the callback writes the rows and the pair
    (``info.query_id``, ``info.batch_id``) in one transaction, after checking
    that the pair is not there yet (a replay of a batch that committed before
    a crash then writes nothing); the end offsets may be kept beside it to
    show the query's position. What the callback returns (or the table's row
    count when None) is the batch's output row count."""

    def __init__(self, write: Callable[[pa.Table, BatchInfo], Any]):
        self._write = write

    def write(self, table: pa.Table, batch_id: int) -> int:
        info = BatchInfo(self._require_query(), batch_id, _read_end_offsets(self.checkpoint or "", batch_id))
        kept = self._write(table, info)
        return table.num_rows if kept is None else int(kept)

    def description(self) -> str:
        return "TransactionalSink[%s]" % getattr(self._write, "__name__", "callback")
