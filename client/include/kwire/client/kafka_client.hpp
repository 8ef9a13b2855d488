// The cluster-level client: bootstrap -> Metadata -> one connection per
// broker, leader routing for ListOffsets, Fetch and Produce, and a bounded
// retry with metadata refresh for the retriable errors that mean "ask someone
// else" (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE,
// FENCED_LEADER_EPOCH, REPLICA_NOT_AVAILABLE, KAFKA_STORAGE_ERROR).
//
// Every request has a deadline: request.timeout.ms per attempt; Metadata
// retries are also bounded as a whole by default.api.timeout.ms. Not thread-safe:
// use one KafkaClient per thread.
#pragma once

#include <chrono>
#include <compare>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kwire/client/config.hpp"
#include "kwire/client/connection.hpp"
#include "kwire/protocol/messages/fetch.hpp"
#include "kwire/protocol/record_batch.hpp"

namespace kwire::client {

struct TopicPartition {
  std::string topic;
  std::int32_t partition = 0;
  auto operator<=>(const TopicPartition&) const = default;
  bool operator==(const TopicPartition&) const = default;
};
std::string to_string(const TopicPartition& tp);  // "topic-3", as Kafka prints it

struct BrokerMetadata {
  std::int32_t node_id = -1;
  std::string host;
  std::int32_t port = 0;
  std::optional<std::string> rack;
};

struct PartitionMetadata {
  std::int32_t partition = 0;
  std::int16_t error_code = 0;
  std::int32_t leader_id = -1;
  std::int32_t leader_epoch = -1;
  std::vector<std::int32_t> replicas;
  std::vector<std::int32_t> isr;
};

struct TopicMetadata {
  std::string name;
  protocol::Uuid topic_id;
  bool is_internal = false;
  std::int16_t error_code = 0;
  std::vector<PartitionMetadata> partitions;  // sorted by partition
};

struct ClusterMetadata {
  std::optional<std::string> cluster_id;
  std::int32_t controller_id = -1;
  std::vector<BrokerMetadata> brokers;
  std::vector<TopicMetadata> topics;  // sorted by name
  const TopicMetadata* topic(const std::string& name) const;
};

/// ListOffsets targets (protocol guide): -2 earliest, -1 latest, -3 the offset
/// of the record with the largest timestamp; >= 0 a timestamp in ms.
inline constexpr std::int64_t kEarliestTimestamp = -2;
inline constexpr std::int64_t kLatestTimestamp = -1;
inline constexpr std::int64_t kMaxTimestamp = -3;

struct ListedOffset {
  /// The offset; -1 when no record has a timestamp >= the one asked for
  /// (a distinct "no offset" result, never a position).
  std::int64_t offset = -1;
  std::int64_t timestamp = -1;
  std::int32_t leader_epoch = -1;
};

/// One partition's part of a Fetch response. `records` holds views into
/// `frame` and into buffers it owns.
struct FetchedPartition {
  TopicPartition tp;
  std::int64_t fetch_offset = 0;
  std::int16_t error_code = 0;
  std::int64_t high_watermark = -1;
  std::int64_t last_stable_offset = -1;
  std::int64_t log_start_offset = -1;
  std::shared_ptr<const protocol::Bytes> frame;
  std::shared_ptr<protocol::DecodedRecords> records;
};

struct ProduceResult {
  std::int16_t error_code = 0;
  std::int64_t base_offset = -1;
  std::int64_t log_append_time_ms = -1;
};

struct NewTopic {
  std::string name;
  std::int32_t num_partitions = 1;
  std::int16_t replication_factor = 1;
  std::map<std::string, std::string> configs;
};

class KafkaClient {
 public:
  explicit KafkaClient(ClientConfig config);
  /// Properties written inline: KafkaClient x({{"bootstrap.servers", "host:9092"}}).
  KafkaClient(std::initializer_list<std::pair<const std::string, std::string>> properties)
      : KafkaClient(std::map<std::string, std::string>(properties)) {}
  explicit KafkaClient(const std::map<std::string, std::string>& properties)
      : KafkaClient(ClientConfig::from_properties(properties)) {}
  ~KafkaClient();
  KafkaClient(const KafkaClient&) = delete;
  KafkaClient& operator=(const KafkaClient&) = delete;

  const ClientConfig& config() const noexcept { return config_; }
  Deadline default_deadline() const { return deadline_after(std::chrono::milliseconds(config_.request_timeout_ms)); }

  /// Fetch metadata for `topics` (all topics when nullopt) and refresh the
  /// leader cache. Topic errors are reported in TopicMetadata::error_code.
  ClusterMetadata metadata(const std::optional<std::vector<std::string>>& topics = std::nullopt);
  /// The last metadata fetched.
  const ClusterMetadata& cached_metadata() const noexcept { return metadata_; }

  /// ListOffsets for each partition's target (see kEarliestTimestamp...), routed
  /// to the leaders, with retries. Throws KafkaError naming the partition when a
  /// non-retriable error (or an exhausted retry budget) remains.
  std::map<TopicPartition, ListedOffset> list_offsets(const std::map<TopicPartition, std::int64_t>& targets,
                                                      std::optional<std::int8_t> isolation_level = std::nullopt);

  /// One Fetch round: a request to every leader involved, sent together and
  /// collected together. Per-partition errors are returned, not thrown; the
  /// leader cache is refreshed when a partition reports a leadership error.
  /// Records below each position are dropped; corrupt batches throw
  /// protocol::CorruptRecordError.
  std::vector<FetchedPartition> fetch(const std::map<TopicPartition, std::int64_t>& positions,
                                      std::chrono::milliseconds max_wait);

  /// Pipelined fetching (what Consumer uses): at most one Fetch is in flight
  /// per leader, because a KIP-227 session allows no more (each request
  /// carries the epoch the previous answer moved the session to). The caller
  /// sends a leader its next Fetch as soon as the previous answer arrived
  /// (wait_fetch), before decoding it (decode_fetch), so the broker prepares
  /// the next answer while the last one is decoded and handed out.
  ///
  /// The answer of one leader, parsed but with its records not yet decoded.
  /// Its record views point into the response frame it holds.
  struct ArrivedFetch {
    std::int32_t leader = -1;
    /// The fetch offsets that were sent.
    std::map<TopicPartition, std::int64_t> positions;
    /// Partitions answered without error: the offset after the last complete
    /// batch (base offset + last offset delta + 1, read from the batch
    /// headers), never below the fetch offset. The fetch position to ask for
    /// next once these records are taken in. Partitions left out of an
    /// incremental answer (nothing new) are absent.
    std::map<TopicPartition, std::int64_t> next_offsets;
    /// Partitions answered with an error, or lost with the connection.
    std::set<TopicPartition> failed;

   private:
    friend class KafkaClient;
    std::optional<Response<protocol::FetchResponse>> response;
    std::vector<FetchedPartition> lost;  // network_exception, one per partition sent
  };
  /// Send a Fetch to every leader of `positions` that has none in flight;
  /// partitions whose leader already has one wait for that leader's next.
  /// `max_wait` is the broker's long-poll time (fetch.max.wait.ms). Returns
  /// the partitions that could not be sent (no leader known, broker
  /// unreachable) with their error code, as fetch() reports them.
  std::vector<FetchedPartition> send_fetches(const std::map<TopicPartition, std::int64_t>& positions,
                                             std::chrono::milliseconds max_wait);
  /// Whether a Fetch sent by send_fetches() is still unanswered.
  bool fetch_in_flight() const noexcept { return !fetches_.empty(); }
  /// Wait until the first in-flight Fetch is answered (or its connection is
  /// lost), at most until `until`; nullopt when none arrived by then. The
  /// fetch session moves on here. Throws KafkaError for a top-level error
  /// other than the fetch-session ones (which close the session, so the next
  /// Fetch opens a new one), TimeoutError when the answer is later than
  /// request.timeout.ms after max_wait (the connection is then closed).
  std::optional<ArrivedFetch> wait_fetch(Deadline until);
  /// Decode an arrived answer as fetch() does (records below each fetch
  /// offset dropped; corrupt batches throw protocol::CorruptRecordError).
  std::vector<FetchedPartition> decode_fetch(ArrivedFetch&& arrived);

  /// Produce one encoded record batch per partition (acks from the config).
  /// With acks=0 results carry base_offset -1.
  std::map<TopicPartition, ProduceResult> produce(const std::map<TopicPartition, protocol::Bytes>& batches);

  /// CreateTopics through the controller; an existing topic is an error unless
  /// `if_not_exists`.
  void create_topics(const std::vector<NewTopic>& topics, bool if_not_exists = false);
  void delete_topics(const std::vector<std::string>& topics);

  /// DeleteRecords: move each partition's log start offset up to the given
  /// offset (-1: up to the high watermark), routed to the leaders, with
  /// retries for leadership changes. Returns each partition's new low
  /// watermark. Throws KafkaError naming the partition for any other error
  /// (e.g. OFFSET_OUT_OF_RANGE when the offset is beyond the high watermark).
  std::map<TopicPartition, std::int64_t> delete_records(const std::map<TopicPartition, std::int64_t>& before_offsets);

  /// CreatePartitions: raise `topic` to `new_total_count` partitions, then wait
  /// (up to request.timeout.ms) until every partition has a leader. Throws
  /// KafkaError naming the topic (e.g. INVALID_PARTITIONS when the count is
  /// not larger than the current one).
  void create_partitions(const std::string& topic, std::int32_t new_total_count);

  /// Number of partitions of `topic` (refreshing metadata when unknown).
  /// Throws KafkaError UNKNOWN_TOPIC_OR_PARTITION when the topic does not exist.
  std::int32_t partition_count(const std::string& topic);

  /// The incremental fetch session (KIP-227) open with a broker, as
  /// {session id, epoch of the next request}; nullopt when none is open.
  std::optional<std::pair<std::int32_t, std::int32_t>> fetch_session(std::int32_t node_id) const {
    auto it = sessions_.find(node_id);
    if (it == sessions_.end() || it->second.id == 0) return std::nullopt;
    return std::make_pair(it->second.id, it->second.epoch);
  }

  /// Connections made (bootstrap and brokers, reconnects included) and SASL
  /// sessions renewed in place (KIP-368 re-authentication) by this client.
  struct ConnectionStats {
    std::uint64_t connects = 0;
    std::uint64_t reauthentications = 0;
  };
  const ConnectionStats& connection_stats() const noexcept { return connection_stats_; }

  /// Leader connection for a partition (from the cache, refreshed when unknown).
  Connection& leader_for(const TopicPartition& tp);
  /// Any live connection (bootstrap or a known broker).
  Connection& any_connection();
  Connection& broker(std::int32_t node_id);

 private:
  ConnectionOptions connection_options() const;
  void renew_if_due(Connection& c);
  Connection& connect_to(const std::string& host, std::uint16_t port, std::int32_t node_id);
  std::int32_t leader_id(const TopicPartition& tp);
  void backoff(int attempt);
  /// Refresh metadata for the topics of `partitions` (a std::set of
  /// TopicPartition or a std::map keyed by it: sorted, so a topic's partitions
  /// are adjacent).
  template <class Partitions>
  void refresh_metadata_for(const Partitions& partitions) {
    std::vector<std::string> topics;
    for (const auto& entry : partitions) {
      const TopicPartition& tp = key_of(entry);
      if (topics.empty() || topics.back() != tp.topic) topics.push_back(tp.topic);
    }
    metadata(topics);
  }
  static const TopicPartition& key_of(const TopicPartition& tp) { return tp; }
  template <class V>
  static const TopicPartition& key_of(const std::pair<const TopicPartition, V>& kv) {
    return kv.first;
  }

  ClientConfig config_;
  ConnectionStats connection_stats_;
  std::unique_ptr<boost::asio::io_context> io_;
  std::map<std::int32_t, std::unique_ptr<Connection>> brokers_;  // by node id
  std::unique_ptr<Connection> bootstrap_;
  ClusterMetadata metadata_;
  std::map<TopicPartition, std::int32_t> leaders_;
  std::map<std::string, protocol::Uuid> topic_ids_;
  std::map<std::string, std::string> names_by_id_;  // base64 topic id -> name

  // KIP-227 incremental fetch session with one broker: after a full fetch
  // that opened it, a request lists only partitions whose fetch offset or
  // max bytes changed, and names the ones to drop in forgotten_topics_data.
  struct FetchSession {
    std::int32_t id = 0;                                                   // 0: none yet (the next fetch asks for one)
    std::int32_t epoch = 0;                                                // epoch of the next request
    std::map<TopicPartition, std::pair<std::int64_t, std::int32_t>> sent;  // offset, max bytes
  };
  std::map<std::int32_t, FetchSession> sessions_;  // by broker node id
  // A Fetch sent by send_fetches() and not yet answered, one per leader.
  struct FetchInFlight {
    Connection* conn = nullptr;  // valid while brokers_[leader] holds it
    std::int32_t corr = 0;
    std::int16_t version = 0;
    Deadline deadline{};
    std::map<TopicPartition, std::int64_t> positions;
    bool incremental = false;
    bool use_session = false;
    std::map<TopicPartition, std::pair<std::int64_t, std::int32_t>> sent;  // the session after the answer
  };
  std::map<std::int32_t, FetchInFlight> fetches_;  // by leader node id
  // Forget the connection to a broker and what was in flight on it.
  void drop_broker(std::int32_t node_id);
  // Decoded record sets no one else holds any more are cleared and reused, so
  // their record vectors keep their memory (not their decompression buffers).
  std::vector<std::shared_ptr<protocol::DecodedRecords>> decoded_pool_;
  std::shared_ptr<protocol::DecodedRecords> reusable_decoded();
  // Partitions whose next batch is larger than max.partition.fetch.bytes:
  // the size to ask for instead (bounded by fetch.max.bytes).
  std::map<TopicPartition, std::int32_t> partition_max_bytes_;
};

}  // namespace kwire::client
