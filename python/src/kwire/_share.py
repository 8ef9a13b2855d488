"""Share groups (KIP-932, Kafka 4.2+): a queue over a topic whose unit of
work is an Arrow record batch."""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple, Union

import pyarrow as pa

from . import _kwire
from .errors import InvalidRecordStateError, KafkaConnectionError, KafkaError, KwireError

TopicPartition = Tuple[str, int]

AcknowledgementCommitCallback = Callable[[Dict[TopicPartition, List[int]], Optional[KwireError]], None]

# Kafka's INVALID_RECORD_STATE: the record's lock had ended, or another
# member holds it.
_INVALID_RECORD_STATE = 121


def _commit_error(topic: str, partition: int, offsets: List[int], code: int, name: Optional[str]):
    """The exception an acknowledgement outcome carries (None: accepted)."""
    if code == 0:
        return None
    what = f"acknowledgement of {len(offsets)} record(s) of {topic}-{partition}"
    if code == -1:
        return KafkaConnectionError(f"kwire: the request carrying the {what} was lost (connection or timeout)")
    cls = InvalidRecordStateError if code == _INVALID_RECORD_STATE else KafkaError
    exc = cls(f"kwire: {name}: the {what} was refused")
    exc.code = code
    return exc

_TYPES = ("accept", "release", "reject", "renew")


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
    - ``reject``: unprocessable, never delivered again;
    - ``renew`` (explicit mode, Kafka 4.2+, KIP-1222): still being worked on;
      the broker gives the record a fresh lock and the next poll hands it out
      again (same offset and delivery count) to be acknowledged anew. A
      renewal refused (the lock had ended) reaches the callback with
      InvalidRecordStateError and the record is not handed out again.

    In implicit mode (the default) every record of a poll is accepted by the
    next poll, ``commit_sync``, ``commit_async`` or ``close``. In explicit
    mode each must be acknowledged with ``acknowledge(batch, type, rows)``
    before the next poll (ShareAcknowledgementModeError otherwise). A record
    not acknowledged before its lock ends (the process died, say) is
    delivered again, with its count + 1, up to the group's delivery limit.

    ``acknowledgement_commit_callback`` is the same as calling
    ``set_acknowledgement_commit_callback`` at once.

    Not thread-safe: one consumer per thread. Use as a context manager or
    call ``close()``.
    """

    def __init__(
        self,
        properties: Mapping[str, Any],
        *,
        include_headers: bool = False,
        acknowledgement_commit_callback: Optional[AcknowledgementCommitCallback] = None,
    ):
        self._callback: Optional[AcknowledgementCommitCallback] = None
        self._c = _kwire.ShareConsumer(dict(properties), include_headers)
        base = pa.schema(self._c.schema())
        self._schema = base.append(pa.field("deliveryCount", pa.int16()))
        if acknowledgement_commit_callback is not None:
            self.set_acknowledgement_commit_callback(acknowledgement_commit_callback)

    def set_acknowledgement_commit_callback(self, callback: Optional[AcknowledgementCommitCallback]) -> None:
        """Calls ``callback(offsets, exception)`` once per partition of every
        acknowledgement request whose outcome is known (Java's
        AcknowledgementCommitCallback.onComplete): ``offsets`` is
        ``{(topic, partition): [offset, ...]}`` (the records that request
        accepted, released or rejected, ascending), ``exception`` None when the
        broker took them, else a kwire.errors exception:
        InvalidRecordStateError (a KafkaError, ``code`` 121) when a lock had
        ended or another member holds the record, another KafkaError with the
        broker's ``code``, or KafkaConnectionError when the request was lost.
        Refused records come back after their lock.

        The callback runs on the thread that calls ``poll``, ``commit_sync``,
        ``commit_async`` or ``close``, inside that call and with the GIL held,
        never on a background thread: ``poll`` gives it the outcomes known
        before it starts fetching (those of acknowledgements the previous poll
        carried, of ``commit_async``), ``commit_sync``, ``commit_async`` and
        ``close`` those known when they end. If the callback raises, the
        outcomes of that call are all still delivered, and then the first
        exception propagates to the caller (a ``poll`` then fetches nothing;
        the consumer stays usable). None removes the callback (outcomes not
        yet delivered are dropped)."""
        if callback is not None and not callable(callback):
            raise TypeError("kwire: the acknowledgement commit callback must be callable or None")
        self._callback = callback
        self._c.collect_acknowledgement_commits(callback is not None)

    def _deliver_commits(self) -> None:
        """Gives the queued acknowledgement outcomes to the callback; raises
        the first exception it raised once all are delivered."""
        callback = self._callback
        if callback is None:
            return
        first: Optional[BaseException] = None
        for topic, partition, offsets, code, name in self._c.take_acknowledgement_commits():
            try:
                callback({(topic, partition): offsets}, _commit_error(topic, partition, offsets, code, name))
            except BaseException as e:  # KeyboardInterrupt too, once the rest are delivered
                if first is None:
                    first = e
        if first is not None:
            raise first

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
        error), GroupAuthorization failures as KafkaError, and what the
        acknowledgement commit callback raised (before fetching)."""
        self._deliver_commits()
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
        long as the batch. ``type`` is ``accept``, ``release``, ``reject`` or
        ``renew`` (see the class).
        The acknowledgements travel with the next poll, or ``commit_sync`` /
        ``commit_async``. Raises ShareAcknowledgementModeError for a record
        the last poll did not hand out or that is acknowledged already."""
        if type not in _TYPES:
            raise ValueError(f"kwire: acknowledge type must be 'accept', 'release', 'reject' or 'renew', not {type!r}")
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
        (``INVALID_RECORD_STATE`` when the lock had ended, ``REQUEST_LOST``).
        The acknowledgement commit callback is called before it returns (what
        the callback raises propagates instead of the result)."""
        results = dict(self._c.commit_sync(int(timeout_ms)))
        self._deliver_commits()
        return results

    def commit_async(self) -> None:
        """Sends the acknowledgements made so far without waiting; their
        outcomes reach the acknowledgement commit callback from a later
        ``poll``, ``commit_sync``, ``commit_async`` or ``close``."""
        self._c.commit_async()
        self._deliver_commits()

    def close(self, timeout_ms: int = 30000) -> None:
        """Sends pending acknowledgements (implicit mode: accepts the last
        poll's records) and leaves the group; then gives the outcomes to the
        acknowledgement commit callback (what it raises propagates, the
        consumer is closed all the same)."""
        self._c.close(int(timeout_ms))
        self._deliver_commits()

    def __enter__(self) -> "ShareConsumer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
