// The cluster-level client: bootstrap -> Metadata -> one connection per
// broker, leader routing for ListOffsets, Fetch and Produce, and a bounded
// retry with metadata refresh for the retriable errors that mean "ask someone
// else" (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE,
// FENCED_LEADER_EPOCH, REPLICA_NOT_AVAILABLE, KAFKA_STORAGE_ERROR).
//
// Every request has a deadline: request.timeout.ms per attempt; Metadata
// retries are also bounded as a whole by default.api.timeout.ms. Not thread-safe:
// use one KafkaClient per thread.
//
// Where Metadata is asked (as Java's NetworkClient): an open connection if
// there is one; before any metadata has arrived, bootstrap.servers; after,
// only the brokers the metadata named, the least recently failed first.
// metadata.recovery.strategy (ClientConfig) decides when the client gives
// them up and starts again from bootstrap.servers (a "rebootstrap", KIP-899
// and KIP-1102): each is written on stderr as one "WARN rebootstrap: ..."
// line giving its reason and counted in ConnectionStats::rebootstraps. A
// Metadata answer whose cluster id is not the one known before is written
// as a WARN line naming both ids and the address that answered.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <compare>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kwire/client/config.hpp"
#include "kwire/client/errors.hpp"
#include "kwire/client/types.hpp"
#include "kwire/protocol/bytes.hpp"

namespace boost::asio {
class io_context;
}

namespace kwire::client {

class Connection;
struct ConnectionOptions;
class FetchCluster;

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
  /// request.timeout.ms from now, never past the cap below.
  Deadline default_deadline() const {
    return std::min(deadline_after(std::chrono::milliseconds(config_.request_timeout_ms)), cap_);
  }
  /// `d`, never past the cap below.
  Deadline capped(Deadline d) const { return std::min(d, cap_); }

  /// While the returned guard lives, every deadline this client sets itself
  /// (a request's request.timeout.ms, Metadata's default.api.timeout.ms, a
  /// connection's socket.connection.setup.timeout.ms) ends by `until` at the
  /// latest: a caller with a deadline of its own (Consumer::poll, as Java's
  /// poll(Duration)) gets control back by then, with TimeoutError from the
  /// call that was cut short. Guards nest; the inner one restores the outer.
  class DeadlineCap {
   public:
    DeadlineCap(const DeadlineCap&) = delete;
    DeadlineCap& operator=(const DeadlineCap&) = delete;
    ~DeadlineCap() { client_.cap_ = previous_; }

   private:
    friend class KafkaClient;
    DeadlineCap(KafkaClient& client, Deadline until) : client_(client), previous_(client.cap_) {
      client.cap_ = std::min(previous_, until);
    }
    KafkaClient& client_;
    Deadline previous_;
  };
  [[nodiscard]] DeadlineCap cap_deadlines(Deadline until) { return DeadlineCap(*this, until); }

  /// The one call that may come from another thread: ends the wait of the
  /// thread using this client at once (ConnectionError), and every later
  /// wait too. For closing a client whose thread is blocked on a broker
  /// that does not answer; the client is not to be used for anything else
  /// afterwards.
  void interrupt() noexcept;

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

  /// The cluster as the Fetcher sees it (leaders, topic ids, Fetch and
  /// OffsetsForLeaderEpoch over this client's connections). Owned by this client.
  FetchCluster& fetch_cluster();

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

  /// Connections made (bootstrap and brokers, reconnects included) and SASL
  /// sessions renewed in place (KIP-368 re-authentication) by this client.
  /// Rebootstraps: times the client dropped its connections and known
  /// brokers to start again from bootstrap.servers (metadata.recovery.strategy).
  struct ConnectionStats {
    std::uint64_t connects = 0;
    std::uint64_t reauthentications = 0;
    std::uint64_t rebootstraps = 0;
  };
  const ConnectionStats& connection_stats() const noexcept { return connection_stats_; }

  /// Leader connection for a partition (from the cache, refreshed when unknown).
  Connection& leader_for(const TopicPartition& tp);
  /// Any live connection; else a new one to a broker of the last metadata
  /// (the least recently failed first), or to bootstrap.servers before any
  /// metadata arrived or after a rebootstrap. Throws ConnectionError (TlsError
  /// when every failure was TLS's) when none can be made; with
  /// metadata.recovery.strategy=rebootstrap, every known broker failing
  /// means a rebootstrap and bootstrap.servers are tried in the same call.
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
  Deadline cap_ = Deadline::max();
  std::shared_ptr<std::atomic<bool>> interrupted_ = std::make_shared<std::atomic<bool>>(false);
  ConnectionStats connection_stats_;
  std::unique_ptr<boost::asio::io_context> io_;
  std::map<std::int32_t, std::unique_ptr<Connection>> brokers_;  // by node id
  std::unique_ptr<Connection> bootstrap_;
  ClusterMetadata metadata_;
  struct LeaderEntry {
    std::int32_t node = -1;
    std::int32_t epoch = -1;
  };
  std::map<TopicPartition, LeaderEntry> leaders_;
  std::map<std::string, protocol::Uuid> topic_ids_;
  std::map<std::string, std::string> names_by_id_;  // base64 topic id -> name

  // Forget the connection to a broker.
  void drop_broker(std::int32_t node_id);

  // metadata.recovery.strategy (metadata_recovery.cpp).
  // A connection to a broker of the last metadata, the least recently failed
  // first; nullptr when none could be made (errors noted).
  Connection* connect_known_broker(std::string& errors, bool& all_tls);
  // Connect to the first of bootstrap.servers that answers (errors noted).
  Connection* connect_bootstrap(std::string& errors, bool& all_tls);
  // Drop every connection and the known brokers; the next connection is
  // made to bootstrap.servers. Writes the WARN line naming `why`.
  void rebootstrap(const std::string& why);
  // A Metadata attempt started at `started` got no usable answer: starts the
  // clock of metadata.recovery.rebootstrap.trigger.ms, or rebootstraps when
  // it has run out.
  void metadata_attempt_failed(Clock::time_point started);
  // A Metadata answer from `answered_by` names cluster `id`: warns when it
  // is not the cluster known so far and then forgets that cluster's topics.
  void take_cluster_id(const std::optional<std::string>& id, const std::string& answered_by);
  bool rebootstrap_enabled() const noexcept {
    return config_.metadata_recovery_strategy == MetadataRecoveryStrategy::rebootstrap;
  }
  std::optional<Clock::time_point> metadata_failing_since_;      // first failed attempt since the last answer
  std::map<std::int32_t, Clock::time_point> connect_failed_at_;  // known broker -> its last failed connect

  // KIP-951: a Fetch or Produce answer named a partition's new leader (and,
  // when given, its endpoint). Taken into the metadata cache when its epoch
  // is newer than the one known and the node is known or `endpoint` names
  // it; returns whether it was (then no Metadata request is needed).
  bool take_leader_hint(const TopicPartition& tp, std::int32_t leader_id, std::int32_t leader_epoch,
                        const BrokerMetadata* endpoint);

  // One retry loop for requests routed to partition leaders (ListOffsets,
  // Produce, DeleteRecords): each round after the first backs off and
  // refreshes metadata, groups the pending partitions by leader, sends one
  // request per leader, then takes the answers in. A lost connection counts
  // as network_exception. Returns the partitions still pending after
  // `retries` rounds, each with the last error it got.
  struct LeaderRequest {
    // Send the request for `parts` on `conn`; {correlation id, version}, or
    // nullopt when no answer is expected (it then settles `todo` itself).
    std::function<std::optional<std::pair<std::int32_t, std::int16_t>>(
        Connection& conn, const std::vector<TopicPartition>& parts, std::set<TopicPartition>& todo)>
        send;
    // Receive an answer and take it in: erase settled partitions from `todo`,
    // record retriable errors in `last_error`, throw for the others.
    std::function<void(Connection& conn, std::int32_t corr, std::int16_t version, std::set<TopicPartition>& todo,
                       std::map<TopicPartition, std::int16_t>& last_error)>
        receive;
    // UNKNOWN_TOPIC_OR_PARTITION still there after a refresh ends the call.
    bool unknown_partition_fails = true;
  };
  std::map<TopicPartition, std::int16_t> route_to_leaders(std::set<TopicPartition> todo, const LeaderRequest& request);
  // Bumped on every connection made; a broker's entry names the connection
  // it has now, so a request sent on an earlier one is known to be lost.
  std::uint64_t connection_generation_ = 0;
  std::map<std::int32_t, std::uint64_t> broker_generation_;
  class FetchAdapter;
  friend class FetchAdapter;
  friend class ProducerCluster;  // the producer's sender thread (producer_cluster.cpp)
  std::unique_ptr<FetchAdapter> fetch_adapter_;
};

}  // namespace kwire::client
