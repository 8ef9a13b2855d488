"""Exceptions raised by kwire.

Every kwire error derives from KwireError. Errors that Spark raises with an
error condition carry it in ``condition`` (for example
``"KAFKA_DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE"``); others have ``None``.
"""

from __future__ import annotations

import builtins
from typing import Optional


class KwireError(Exception):
    """Base class of kwire's errors."""

    condition: Optional[str] = None

    def __init__(self, message: str, condition: Optional[str] = None):
        super().__init__(message)
        if condition is not None:
            self.condition = condition


class ConfigError(KwireError, ValueError):
    """A source option, client property or schema that is not accepted
    (Spark's option errors, unknown Kafka properties, bad DDL)."""


class KafkaDataLossError(KwireError):
    """Spark's KAFKA_DATA_LOSS: offsets that were to be read are gone.

    ``condition`` is Spark's full condition name, e.g.
    ``KAFKA_DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE``; ``topic``, ``partition``,
    ``start_offset``, ``end_offset`` describe the first partition concerned
    (-1 where not applicable)."""

    topic: str = ""
    partition: int = -1
    start_offset: int = -1
    end_offset: int = -1


class OffsetError(KwireError):
    """Resolved offsets that cannot be read (Spark's
    RESOLVED_START_OFFSET_GREATER_THAN_END_OFFSET)."""


class KafkaError(KwireError):
    """An error code returned by a broker; ``code`` is Kafka's number."""

    code: int = -1


class OffsetOutOfRangeError(KafkaError):
    """A position outside the partition's log with auto.offset.reset=none
    (Java: OffsetOutOfRangeException). ``topic``, ``partition``, ``offset``."""

    topic: str = ""
    partition: int = -1
    offset: int = -1


class LogTruncationError(OffsetOutOfRangeError):
    """The partition's log diverged from what was consumed (KIP-320)."""


class ProducerFencedError(KafkaError):
    """Another producer with the same transactional.id called
    init_transactions(): close this one (Java: ProducerFencedException)."""


class TransactionAbortableError(KafkaError):
    """The open transaction cannot commit: call abort_transaction(), then
    begin a new transaction (Java: TransactionAbortableException)."""


class ProducerFatalError(KafkaError):
    """The producer can do nothing more (an authorization failure on the
    transactional id, an invalid transaction state): close it."""


class InvalidRecordStateError(KafkaError):
    """A share group's broker refused an acknowledgement (Kafka's
    INVALID_RECORD_STATE, ``code`` 121): the record's acquisition lock had
    ended, or it is not held by this member (Java:
    InvalidRecordStateException). Given to a ShareConsumer's acknowledgement
    commit callback."""


class TransactionStateError(KwireError):
    """A transaction call in the wrong state (begin twice, commit without
    begin, send outside a transaction of a transactional producer)."""


class TransactionAbortedError(KwireError):
    """A record of a transaction that was aborted before it was sent."""


class ShareAcknowledgementModeError(KwireError):
    """A share consumer's acknowledgement out of turn: a record the last
    poll did not hand out (or acknowledged already), or a poll in explicit
    mode while records of the previous poll are unacknowledged (Java:
    IllegalStateException)."""


class AuthenticationError(KwireError):
    """SASL authentication failed (bad credentials, unsupported mechanism)."""


class KafkaConnectionError(KwireError, builtins.ConnectionError):
    """A broker connection could not be made or was lost (TLS included)."""


class KafkaTimeoutError(KwireError, builtins.TimeoutError):
    """A wait passed its deadline (request.timeout.ms, a poll timeout)."""


class CorruptBatchError(KwireError):
    """A record batch failed a check (CRC, length, compression)."""


class SchemaRegistryError(KwireError):
    """A Schema Registry request failed: ``http_status`` and Confluent's
    ``error_code`` (e.g. 404 / 40403 "Schema not found"), or the registry
    could not be reached (``http_status`` 0)."""

    http_status: int = 0
    error_code: int = 0


class MalformedRecordError(KwireError):
    """A value that cannot be decoded under mode FAILFAST (Spark's
    MALFORMED_RECORD_IN_PARSING); ``topic``, ``partition`` and ``offset``
    name the record."""

    topic: str = ""
    partition: int = -1
    offset: int = -1


class CheckpointError(KwireError):
    """The checkpoint directory cannot be used (in use by another query,
    unreadable files, disk full)."""


__all__ = [
    "KwireError",
    "ConfigError",
    "KafkaDataLossError",
    "OffsetError",
    "KafkaError",
    "OffsetOutOfRangeError",
    "LogTruncationError",
    "ProducerFencedError",
    "TransactionAbortableError",
    "ProducerFatalError",
    "InvalidRecordStateError",
    "TransactionStateError",
    "TransactionAbortedError",
    "ShareAcknowledgementModeError",
    "AuthenticationError",
    "KafkaConnectionError",
    "KafkaTimeoutError",
    "CorruptBatchError",
    "CheckpointError",
    "SchemaRegistryError",
    "MalformedRecordError",
]
