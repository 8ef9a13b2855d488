// What a consumer hands out: records (views into the fetched buffers, kept
// alive by the ConsumerRecords that holds them) and the typed errors a poll can
// raise for one partition.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kwire/client/errors.hpp"
#include "kwire/client/types.hpp"
#include "kwire/protocol/record_batch.hpp"

namespace kwire::client {

struct ConsumerRecord {
  const std::string* topic = nullptr;
  std::int32_t partition = 0;
  std::int64_t offset = 0;
  std::int64_t timestamp = -1;
  std::int8_t timestamp_type = -1;          // -1 none, 0 CreateTime, 1 LogAppendTime
  std::optional<protocol::ByteSpan> key;    // nullopt = null key
  std::optional<protocol::ByteSpan> value;  // nullopt = null value (tombstone)
  const std::vector<protocol::RecordHeader>* headers = nullptr;
  /// The partition leader epoch of the record's batch (-1 for legacy messages).
  std::int32_t leader_epoch = -1;

  std::string_view key_view() const {
    return key ? std::string_view(reinterpret_cast<const char*>(key->data()), key->size()) : std::string_view();
  }
  std::string_view value_view() const {
    return value ? std::string_view(reinterpret_cast<const char*>(value->data()), value->size()) : std::string_view();
  }
};

/// Records returned by one poll. Owns the buffers the records point into;
/// records stay valid while this object lives.
class ConsumerRecords {
 public:
  std::size_t size() const noexcept { return round_ ? round_->records.size() : 0; }
  bool empty() const noexcept { return size() == 0; }
  const ConsumerRecord* begin() const noexcept { return round_ ? round_->records.data() : nullptr; }
  const ConsumerRecord* end() const noexcept { return begin() + size(); }
  const ConsumerRecord& operator[](std::size_t i) const { return round_->records[i]; }

 private:
  friend class Fetcher;
  // The records of one poll and what they point into.
  struct Round {
    std::vector<ConsumerRecord> records;
    std::vector<std::shared_ptr<const protocol::Bytes>> frames;
    std::vector<std::shared_ptr<protocol::DecodedRecords>> decoded;
    std::vector<std::shared_ptr<const std::string>> topics;
  };
  std::shared_ptr<const Round> round_;
};

/// A partition's position is out of the broker's log range (OFFSET_OUT_OF_RANGE)
/// or unknown, and auto.offset.reset is none. Java: OffsetOutOfRangeException.
class OffsetOutOfRangeError : public KafkaError {
 public:
  OffsetOutOfRangeError(TopicPartition tp, std::int64_t offset, const std::string& what)
      : KafkaError(1, what), tp_(std::move(tp)), offset_(offset) {}
  const TopicPartition& partition() const noexcept { return tp_; }
  /// The position that was out of range (-1 when none was known).
  std::int64_t offset() const noexcept { return offset_; }

 private:
  TopicPartition tp_;
  std::int64_t offset_;
};

/// The log of a partition diverged from what was consumed (KIP-320): after a
/// leader change (an unclean election) the new leader's log ends, for the
/// leader epoch of the last record consumed, below the consumer's position.
/// Raised with auto.offset.reset=none, as Java's LogTruncationException (a
/// kind of OffsetOutOfRangeException); with another policy the position is
/// moved to divergent_offset() instead. offset() is the position.
class LogTruncationError : public OffsetOutOfRangeError {
 public:
  LogTruncationError(TopicPartition tp, std::int64_t position, std::int64_t divergent_offset, const std::string& what)
      : OffsetOutOfRangeError(std::move(tp), position, what), divergent_offset_(divergent_offset) {}
  /// The first offset known to diverge: the end offset the leader reported
  /// for the epoch of the last consumed record.
  std::int64_t divergent_offset() const noexcept { return divergent_offset_; }

 private:
  std::int64_t divergent_offset_;
};

/// A record batch of one partition failed a check (CRC, length, magic,
/// compression, record layout). Raised once the records before it were handed
/// out; the position stays at base_offset(), so polling again fetches the
/// same batch again, while other partitions keep flowing. Java: the
/// KafkaException "Record batch for partition ... is corrupt" (KAFKA-5078).
class CorruptBatchError : public ClientError {
 public:
  CorruptBatchError(TopicPartition tp, std::int64_t base_offset, protocol::CorruptionKind kind, const std::string& what)
      : ClientError(what), tp_(std::move(tp)), base_offset_(base_offset), kind_(kind) {}
  const TopicPartition& partition() const noexcept { return tp_; }
  std::int64_t base_offset() const noexcept { return base_offset_; }
  protocol::CorruptionKind kind() const noexcept { return kind_; }

 private:
  TopicPartition tp_;
  std::int64_t base_offset_;
  protocol::CorruptionKind kind_;
};

/// A partition's last Fetch answer without error: its offsets as the leader
/// reported them.
struct FetchedPartition {
  TopicPartition tp;
  std::int64_t fetch_offset = 0;
  std::int64_t high_watermark = -1;
  std::int64_t last_stable_offset = -1;
  std::int64_t log_start_offset = -1;
  std::int32_t node = -1;  // the broker that answered (the leader, or a follower it named)
};

}  // namespace kwire::client
