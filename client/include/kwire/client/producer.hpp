// A batching producer: send() appends a record to its partition's batch;
// flush() encodes each batch (record batch v2, compression.type) and sends one
// Produce request per leader, waiting for acks. A batch is also sent when it
// reaches batch.size bytes.
//
// Partition choice when none is given: records with a key go to
// murmur2(key) % partitions (the Java client's default, so keyed records land
// where a Java producer would put them); records without a key fill one
// partition's batch at a time, moving on when a batch is sent.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kwire/client/kafka_client.hpp"
#include "kwire/protocol/record_batch.hpp"

namespace kwire::client {

struct ProducerMessage {
  std::string topic;
  std::optional<std::int32_t> partition;
  std::optional<protocol::Bytes> key;
  std::optional<protocol::Bytes> value;
  std::vector<protocol::RecordHeader> headers;
  std::int64_t timestamp = -1;  // ms; -1 = now
};

/// A produce to one partition that failed: the broker's error code (as
/// KafkaError), the partition, and whether the error is retriable (a later
/// send may succeed; it was already retried `retries` times with back-off).
class ProduceError : public KafkaError {
 public:
  ProduceError(TopicPartition tp, std::int16_t code, bool retriable, const std::string& what)
      : KafkaError(code, what), tp_(std::move(tp)), retriable_(retriable) {}
  const TopicPartition& partition() const noexcept { return tp_; }
  bool retriable() const noexcept { return retriable_; }

 private:
  TopicPartition tp_;
  bool retriable_;
};

/// NOT_ENOUGH_REPLICAS (19) or NOT_ENOUGH_REPLICAS_AFTER_APPEND (20) with
/// acks=all: the partition's in-sync replicas are fewer than its
/// min.insync.replicas. Retriable, as Java's NotEnoughReplicas(AfterAppend)
/// Exception; raised once the retries are used up. After code 20 the leader
/// has appended the batch, so a retry may write it twice (no idempotence).
class NotEnoughReplicasError : public ProduceError {
 public:
  using ProduceError::ProduceError;
};

/// Java's murmur2 as used by its default partitioner (returns the raw hash).
std::int32_t murmur2(protocol::ByteSpan data) noexcept;

class Producer {
 public:
  /// Properties written inline: Producer x({{"bootstrap.servers", "host:9092"}}).
  Producer(std::initializer_list<std::pair<const std::string, std::string>> properties)
      : Producer(std::map<std::string, std::string>(properties)) {}
  explicit Producer(const std::map<std::string, std::string>& properties);
  explicit Producer(ClientConfig config);
  ~Producer();

  /// Buffer one record; may send full batches. Throws ClientError on failure.
  void send(ProducerMessage msg);
  /// Send everything buffered and wait for the acks. Retriable errors
  /// (leadership moved, NOT_ENOUGH_REPLICAS, ...) are retried `retries`
  /// times with back-off (retry.backoff.ms doubling, at most 1 s). Throws
  /// ProduceError naming the partition (NotEnoughReplicasError for 19/20)
  /// when a partition still fails; the batches of other partitions that
  /// failed are dropped with it, those that succeeded are counted.
  void flush();

  std::uint64_t records_sent() const noexcept { return records_sent_; }
  KafkaClient& client() noexcept { return *client_; }

 private:
  void send_batches(bool only_full);
  std::unique_ptr<KafkaClient> client_;
  std::map<TopicPartition, std::vector<protocol::ProducerRecord>> pending_;
  std::map<TopicPartition, std::size_t> pending_bytes_;
  std::map<std::string, std::int32_t> sticky_partition_;
  std::uint64_t records_sent_ = 0;
  std::uint32_t round_robin_ = 0;
};

}  // namespace kwire::client
