// A Java-style consumer without a group: assign partitions, seek, poll with a
// timeout and get records back. Positions are the next offset to read, as in
// the Java client's position().
//
// auto.offset.reset (earliest | latest | none; default latest, as in Java)
// decides what happens when a position is unknown or out of range; with
// "none" poll() throws OffsetOutOfRangeError naming the partition and offset.
//
// A partition whose fetch fails with a retriable error (leadership moved,
// connection lost...) is left out of the next fetches for a back-off
// (retry.backoff.ms, doubling, at most 1 s) while the other partitions keep
// being fetched; it resumes at the same position. After `retries`
// consecutive broker errors on one partition poll() throws KafkaError naming
// the partition and the error (lost connections back off but do not count).
//
// Fetches are pipelined, as in the Java client and librdkafka: when a
// leader's Fetch answer arrives, the next Fetch to that leader goes out at once
// (from the offsets after the records just received), before the records are
// decoded and handed out, so the broker works while poll() returns records.
// At most one Fetch per leader is in flight (a KIP-227 fetch session allows no
// more), so memory holds at most one answer per leader being read plus the
// records buffered for poll(). A Fetch may outlive the poll() that sent it
// (it waits up to fetch.max.wait.ms on the broker). Its answer is used only
// for partitions still assigned, not paused and at the position it was sent
// for: after seek(), pause() or assign() that data is dropped and fetched
// again from the partition's position, so nothing is lost or repeated.
#pragma once

#include <chrono>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kwire/client/kafka_client.hpp"

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
  std::size_t size() const noexcept { return end_ - begin_; }
  bool empty() const noexcept { return begin_ == end_; }
  const ConsumerRecord* begin() const noexcept { return data() + begin_; }
  const ConsumerRecord* end() const noexcept { return data() + end_; }
  const ConsumerRecord& operator[](std::size_t i) const { return data()[begin_ + i]; }

 private:
  friend class Consumer;
  // The records of one fetch round and what they point into, shared by the
  // ConsumerRecords handed out from it (max.poll.records at a time).
  struct Round {
    std::vector<ConsumerRecord> records;
    std::vector<std::shared_ptr<const protocol::Bytes>> frames;
    std::vector<std::shared_ptr<protocol::DecodedRecords>> decoded;
    std::vector<std::shared_ptr<const std::string>> topics;
  };
  const ConsumerRecord* data() const noexcept { return round_ ? round_->records.data() : nullptr; }
  std::shared_ptr<const Round> round_;
  std::size_t begin_ = 0;
  std::size_t end_ = 0;
};

class OffsetOutOfRangeError : public KafkaError {
 public:
  OffsetOutOfRangeError(TopicPartition tp, std::int64_t offset, const std::string& what)
      : KafkaError(1, what), tp_(std::move(tp)), offset_(offset) {}
  const TopicPartition& partition() const noexcept { return tp_; }
  std::int64_t offset() const noexcept { return offset_; }

 private:
  TopicPartition tp_;
  std::int64_t offset_;
};

class Consumer {
 public:
  /// Properties by Java names (bootstrap.servers, fetch.max.bytes, ...).
  /// Properties written inline: Consumer x({{"bootstrap.servers", "host:9092"}}).
  Consumer(std::initializer_list<std::pair<const std::string, std::string>> properties)
      : Consumer(std::map<std::string, std::string>(properties)) {}
  explicit Consumer(const std::map<std::string, std::string>& properties);
  explicit Consumer(ClientConfig config, std::string auto_offset_reset = "latest");
  ~Consumer();

  void assign(const std::vector<TopicPartition>& partitions);
  std::vector<TopicPartition> assignment() const;
  void seek(const TopicPartition& tp, std::int64_t offset);
  void seek_to_beginning(const std::vector<TopicPartition>& tps);
  void seek_to_end(const std::vector<TopicPartition>& tps);
  /// Next offset to read; resolves it with auto.offset.reset when unknown.
  std::int64_t position(const TopicPartition& tp);
  /// Stop fetching a partition (e.g. once a range end is reached) / resume it.
  void pause(const std::vector<TopicPartition>& tps);
  void resume(const std::vector<TopicPartition>& tps);

  /// Wait up to `timeout` for records from the assigned, unpaused partitions.
  /// Returns at most max.poll.records records (empty on timeout).
  ConsumerRecords poll(std::chrono::milliseconds timeout);

  std::map<TopicPartition, std::int64_t> beginning_offsets(const std::vector<TopicPartition>& tps);
  std::map<TopicPartition, std::int64_t> end_offsets(const std::vector<TopicPartition>& tps);
  /// Earliest offset whose timestamp >= the given one; nullopt where none.
  std::map<TopicPartition, std::optional<ListedOffset>> offsets_for_times(
      const std::map<TopicPartition, std::int64_t>& timestamps);
  /// High watermark / last stable offset / log start offset from the last fetch.
  std::optional<FetchedPartition> last_fetch_info(const TopicPartition& tp) const;

  KafkaClient& client() noexcept { return *client_; }

 private:
  void resolve_positions();
  std::unique_ptr<KafkaClient> client_;
  std::string auto_offset_reset_;
  std::map<TopicPartition, std::optional<std::int64_t>> positions_;
  std::map<TopicPartition, bool> paused_;
  std::map<TopicPartition, FetchedPartition> last_info_;
  // Records decoded but not yet returned (max.poll.records): buffered_->records
  // from buffered_pos_ on.
  std::shared_ptr<ConsumerRecords::Round> buffered_;
  std::size_t buffered_pos_ = 0;
  std::size_t buffered_left() const noexcept { return buffered_ ? buffered_->records.size() - buffered_pos_ : 0; }
  // Positions to move to once the buffered records of a partition are all returned.
  std::map<TopicPartition, std::int64_t> pending_next_;
  // Partitions backing off after a retriable fetch error.
  struct RetryState {
    int failures = 0;  // consecutive broker errors (budget: config().retries)
    int attempts = 0;  // consecutive failures of any kind (sets the back-off)
    Clock::time_point not_before{};
  };
  std::map<TopicPartition, RetryState> retry_;
};

}  // namespace kwire::client
