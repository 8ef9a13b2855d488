"""Share groups (KIP-932, Kafka 4.2+): a queue over a topic whose unit of
work is an Arrow record batch."""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple, Union

import pyarrow as pa

from . import _kwire

TopicPartition = Tuple[str, int]

_TYPES = ("accept", "release", "reject")


class ShareConsumer:
    """A member of a share group, with the names of Java's
    KafkaShareConsumer. ``properties`` are Java's (``bootstrap.servers``,
    ``group.id`` (required), ``share.acknowledgement.mode``
    (``implicit``/``explicit``), ``max.poll.records``, security...).

    ``poll`` returns a pyarrow.RecordBatch with Spark's Kafka columns and a
    ``deliveryCount`` column (int16, 1 on the first delivery). The records
    are acquired for the broker's lock duration (``acquisition_lock_ms``);
    each is then acknowledged:

    - ``accept``: processed, never delivered again;
    - ``release``: given back, delivered again at once with its count + 1;
    - ``reject``: unprocessable, never delivered again.

    In implicit mode (the default) every record of a poll is accepted by the
    next poll, ``commit_sync``, ``commit_async`` or ``close``. In explicit
    mode each must be acknowledged with ``acknowledge(batch, type, rows)``
    before the next poll (ShareAcknowledgementModeError otherwise). A record
    not acknowledged before its lock ends (the process died, say) is
    delivered again, with its count + 1, up to the group's delivery limit.

    Not thread-safe: one consumer per thread. Use as a context manager or
    call ``close()``.
    """

    def __init__(self, properties: Mapping[str, Any], *, include_headers: bool = False):
        self._c = _kwire.ShareConsumer(dict(properties), include_headers)
        base = pa.schema(self._c.schema())
        self._schema = base.append(pa.field("deliveryCount", pa.int16()))

    @property
    def schema(self) -> pa.Schema:
        """The schema of every batch ``poll`` returns."""
        return self._schema

    def subscribe(self, topics: Iterable[str]) -> None:
        if isinstance(topics, str):
            topics = [topics]
        self._c.subscribe([str(t) for t in topics])

    def unsubscribe(self) -> None:
        self._c.unsubscribe()

    def assignment(self) -> List[TopicPartition]:
        """The partitions the group's coordinator assigns to this member
        (every member of a share group may share each partition)."""
        return [tuple(p) for p in self._c.assignment()]

    @property
    def acquisition_lock_ms(self) -> int:
        """The lock duration the brokers reported (ms; 0 before a fetch)."""
        return self._c.acquisition_lock_ms()

    @property
    def member_id(self) -> str:
        return self._c.member_id()

    def poll(self, timeout_ms: int = 1000) -> pa.RecordBatch:
        """Waits up to timeout_ms for records (at most max.poll.records);
        the GIL is released while waiting; Ctrl-C interrupts it. An empty
        batch on timeout. Raises ShareAcknowledgementModeError (explicit mode,
        records of the last poll unacknowledged), KafkaError (a fatal group
        error), GroupAuthorization failures as KafkaError."""
        batch, counts = self._c.poll(int(timeout_ms))
        base = pa.record_batch(batch)
        count_column = pa.Array.from_buffers(pa.int16(), base.num_rows, [None, pa.py_buffer(counts)])
        return pa.RecordBatch.from_arrays(base.columns + [count_column], schema=self._schema)

    def acknowledge(
        self,
        batch: Union[pa.RecordBatch, pa.Table],
        type: str = "accept",
        rows: Optional[Union[Iterable[int], pa.Array, pa.ChunkedArray]] = None,
    ) -> None:
        """Acknowledges the records of ``batch`` (one a poll returned, or any
        table with its ``topic``, ``partition`` and ``offset`` columns):
        all of them, or those of ``rows``, row indices or a boolean mask as
        long as the batch. ``type`` is ``accept``, ``release`` or ``reject``.
        The acknowledgements travel with the next poll, or ``commit_sync`` /
        ``commit_async``. Raises ShareAcknowledgementModeError for a record
        the last poll did not hand out or that is acknowledged already."""
        if type not in _TYPES:
            raise ValueError(f"kwire: acknowledge type must be 'accept', 'release' or 'reject', not {type!r}")
        topics = batch.column("topic").to_pylist()
        partitions = batch.column("partition").to_pylist()
        offsets = batch.column("offset").to_pylist()
        n = len(offsets)
        if rows is None:
            index = range(n)
        else:
            if isinstance(rows, (pa.Array, pa.ChunkedArray)):
                rows = rows.to_pylist()
            rows = list(rows)
            if any(r is None for r in rows):
                raise ValueError("kwire: rows holds a null (a mask or index list without nulls is needed)")
            if rows and all(isinstance(r, bool) for r in rows):
                if len(rows) != n:
                    raise ValueError(f"kwire: a mask of {len(rows)} values for a batch of {n} rows")
                index = [i for i, keep in enumerate(rows) if keep]
            else:
                index = []
                for r in rows:
                    i = int(r)
                    if i < 0 or i >= n:
                        raise IndexError(f"kwire: row {i} is not in a batch of {n} rows")
                    index.append(i)
        self._c.acknowledge([(topics[i], partitions[i], offsets[i]) for i in index], type)

    def commit_sync(self, timeout_ms: int = 30000) -> Dict[TopicPartition, Optional[str]]:
        """Sends the acknowledgements made so far and waits for the answers:
        per partition None (acknowledged) or the error's name
        (``INVALID_RECORD_STATE`` when the lock had ended, ``REQUEST_LOST``)."""
        return dict(self._c.commit_sync(int(timeout_ms)))

    def commit_async(self) -> None:
        """Sends the acknowledgements made so far without waiting."""
        self._c.commit_async()

    def close(self, timeout_ms: int = 30000) -> None:
        """Sends pending acknowledgements (implicit mode: accepts the last
        poll's records) and leaves the group."""
        self._c.close(int(timeout_ms))

    def __enter__(self) -> "ShareConsumer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
