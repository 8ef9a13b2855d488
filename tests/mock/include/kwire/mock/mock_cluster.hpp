// An in-process fake Kafka cluster for tests.
//
// Each mock broker listens on 127.0.0.1 (an ephemeral port) and speaks the
// real wire protocol, encoded and decoded with kwire's own message
// declarations: ApiVersions, Metadata, ListOffsets, Fetch, Produce,
// CreateTopics and DeleteTopics. The cluster runs its own io_context thread;
// every public method is thread-safe.
//
// Partition logs hold magic-2 record batches. Offsets are assigned on append
// (the stored batch's baseOffset is rewritten), so a Fetch returns the same
// bytes a broker would.
//
// Faults are queued per API (and optionally per partition and per broker) and
// consumed by the requests they match, in order: "the next 2 Fetch responses
// for t-0 carry NOT_LEADER_OR_FOLLOWER, then OK" is one Fault with times = 2.
// Every request received is recorded (API, version, broker, partitions with
// their offsets, arrival time) so tests can assert the exact sequence.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kwire/protocol/api_keys.hpp"
#include "kwire/protocol/bytes.hpp"
#include "kwire/protocol/errors.hpp"

namespace kwire::mock {

using MockClock = std::chrono::steady_clock;

/// One partition named in a request, with the offset it asked for (Fetch: the
/// fetch offset; ListOffsets: the timestamp target; others: -1).
struct RequestedPartition {
  std::string topic;  // resolved from the topic id for id-based requests ("" if unknown)
  std::int32_t partition = 0;
  std::int64_t offset = -1;
  friend bool operator==(const RequestedPartition&, const RequestedPartition&) = default;
};

struct RequestRecord {
  protocol::ApiKey api_key = protocol::ApiKey::api_versions;
  std::int16_t version = 0;
  std::int32_t broker = -1;  // node id of the mock broker that received it
  std::int32_t correlation_id = 0;
  bool by_topic_id = false;  // Fetch/Produce v13+: topics named by id
  std::vector<RequestedPartition> partitions;
  std::vector<std::string> topics;        // Metadata/CreateTopics/DeleteTopics: topic names asked for
  std::vector<protocol::Uuid> topic_ids;  // Fetch/Produce v13+: the ids sent, one per topic
  /// Fetch v9+ / OffsetsForLeaderEpoch: the current_leader_epoch sent with
  /// each of `partitions` (-1 when not sent).
  std::vector<std::int32_t> current_leader_epochs;
  MockClock::time_point received;
  bool mentions(const std::string& topic, std::int32_t partition) const;
};

/// A fault to inject. Matching: same API; `broker` (if set) equals the
/// receiving broker; `topic`/`partition` (if set) match a partition of the
/// request. Each matching request consumes one use; queued faults with the
/// same target apply one after the other.
struct Fault {
  protocol::ApiKey api = protocol::ApiKey::fetch;
  std::optional<std::string> topic;
  std::optional<std::int32_t> partition;
  std::optional<std::int32_t> broker;
  int times = 1;

  /// Error for the matching partitions (or, with no topic set, for every
  /// partition of the request; ApiVersions/Create/Delete, and Metadata v13+
  /// (e.g. REBOOTSTRAP_REQUIRED): the top-level error).
  std::int16_t error_code = 0;
  /// Hold the response this long before writing it (request timeouts).
  std::chrono::milliseconds delay{0};
  /// throttle_time_ms carried by the response.
  std::int32_t throttle_ms = 0;
  /// Write half of the response frame, then close the connection.
  bool drop_connection = false;
  /// Fetch: cut the last record batch of the matching partitions in half.
  bool truncate_last_batch = false;
  /// Fetch: flip a byte inside the last record batch of the matching
  /// partitions (its CRC no longer matches).
  bool corrupt_last_batch = false;
  /// Fetch: list the matching partitions twice in the answer.
  bool duplicate_partition = false;
  /// Metadata: answer the matching partitions with the leader and leader
  /// epoch they had before the last move_leader / bump_leader_epoch (a
  /// broker whose metadata lags during a leader move).
  bool stale_metadata = false;
  /// Produce: append the batches, then answer `error_code` (as a leader that
  /// wrote a batch but answers NOT_ENOUGH_REPLICAS_AFTER_APPEND or times out).
  bool append_anyway = false;
};

struct MockRecord {
  std::optional<std::string> key;
  std::optional<std::string> value;
  std::int64_t timestamp = -1;  // -1 = now
};

class MockCluster {
 public:
  /// `brokers` mock brokers with node ids 1..brokers.
  explicit MockCluster(int brokers = 1);
  ~MockCluster();
  MockCluster(const MockCluster&) = delete;
  MockCluster& operator=(const MockCluster&) = delete;

  /// "127.0.0.1:p1,127.0.0.1:p2,..."
  std::string bootstrap_servers() const;
  /// The cluster id Metadata answers carry ("kwire-mock-cluster" unless set).
  void set_cluster_id(const std::string& id);
  std::vector<std::int32_t> node_ids() const;
  std::uint16_t port(std::int32_t node_id) const;
  /// "127.0.0.1:port" of a broker, as the client names it in errors.
  std::string endpoint(std::int32_t node_id) const;

  // ---- topics and logs ----

  /// Create a topic; partition p's leader is leaders[p] when given, else node
  /// ids round-robin. Returns the topic id.
  protocol::Uuid create_topic(const std::string& name, std::int32_t partitions, std::vector<std::int32_t> leaders = {});
  void delete_topic(const std::string& name);
  /// Delete and create again with a new id and empty logs.
  protocol::Uuid recreate_topic(const std::string& name, std::int32_t partitions);
  /// Grow a topic to `partitions` partitions.
  void add_partitions(const std::string& name, std::int32_t partitions);
  std::optional<protocol::Uuid> topic_id(const std::string& name) const;
  bool has_topic(const std::string& name) const;

  /// Append the records as one batch; returns its base offset.
  std::int64_t append(const std::string& topic, std::int32_t partition, const std::vector<MockRecord>& records);
  /// Append one encoded magic-2 batch as it is (its base offset becomes the
  /// log end). Offsets its lastOffsetDelta covers past its last record (as
  /// compaction leaves them) are a gap in the log. Returns its base offset.
  std::int64_t append_batch_bytes(const std::string& topic, std::int32_t partition, protocol::Bytes batch);
  /// Append `count` records with values "<prefix><offset>" as batches of `per_batch`.
  void append_values(const std::string& topic, std::int32_t partition, int count, int per_batch = 1,
                     const std::string& prefix = "v");
  std::int64_t log_start_offset(const std::string& topic, std::int32_t partition) const;
  std::int64_t high_watermark(const std::string& topic, std::int32_t partition) const;
  /// Move the log start (as retention or DeleteRecords would); batches wholly
  /// below it are dropped. Fetches below it get OFFSET_OUT_OF_RANGE.
  void set_log_start_offset(const std::string& topic, std::int32_t partition, std::int64_t offset);
  /// Move leadership of a partition to another broker (bumps the leader epoch).
  /// The old leader answers NOT_LEADER_OR_FOLLOWER for it from now on.
  void move_leader(const std::string& topic, std::int32_t partition, std::int32_t node_id);
  std::int32_t leader(const std::string& topic, std::int32_t partition) const;
  /// A new leader epoch with the same leader (as after a controller failover
  /// or an ISR change): Fetch requests naming the old epoch get
  /// FENCED_LEADER_EPOCH.
  void bump_leader_epoch(const std::string& topic, std::int32_t partition);
  std::int32_t leader_epoch(const std::string& topic, std::int32_t partition) const;
  /// Drop every batch from `offset` on (as a replica that becomes leader
  /// after an unclean election), so the log ends at `offset`.
  void truncate_log(const std::string& topic, std::int32_t partition, std::int64_t offset);
  /// A broker that is down still accepts TCP connections but closes each one
  /// (and every open one at its next request) without answering.
  void set_broker_down(std::int32_t node_id, bool down);

  // ---- versions ----

  /// A scripted API the mock does not implement itself (the group APIs):
  /// advertised with [min_version, max_version]; each request is recorded
  /// and its whole payload (header and body) handed to `handler`, which
  /// returns the response frame (encode_response_frame) or nullopt to hang
  /// up. Runs on the cluster's thread with its lock held: it must not call
  /// back into the MockCluster.
  using Handler = std::function<std::optional<protocol::Bytes>(
      std::int32_t node, std::int16_t version, std::int32_t correlation_id, const protocol::Bytes& payload)>;
  void set_handler(protocol::ApiKey api, std::int16_t min_version, std::int16_t max_version, Handler handler);

  /// Called for each record batch of a Produce request before it is
  /// appended (on the cluster's thread, its lock held: it must not call back
  /// into the MockCluster): returns an error code for the partition (0:
  /// append at `log_end`), or sets *duplicate_of to the offset an earlier
  /// copy of the batch was written at (answered with it, not appended).
  using ProduceCheck = std::function<std::int16_t(
      std::int32_t node, std::int16_t version, const std::optional<std::string>& transactional_id,
      const std::string& topic, std::int32_t partition, protocol::ByteSpan batch, std::int64_t log_end,
      std::int64_t* duplicate_of)>;
  void set_produce_check(ProduceCheck check);
  /// A finalized feature level ApiVersions reports (KIP-584), e.g.
  /// "transaction.version" 2 for transactions v2.
  void set_finalized_feature(const std::string& name, std::int16_t level);

  /// Highest version advertised (and accepted) for an API.
  void set_max_version(protocol::ApiKey api, std::int16_t max_version);
  /// Incremental fetch sessions (KIP-227), off by default: a Fetch (v7+) with
  /// session id 0 and epoch 0 opens a session; later fetches name it, list
  /// only changed partitions and drop forgotten ones. Answers
  /// FETCH_SESSION_ID_NOT_FOUND / INVALID_FETCH_SESSION_EPOCH as a broker does.
  void enable_fetch_sessions(bool on);
  /// Forget every fetch session of a broker (as a broker evicting them from
  /// its cache): the next incremental fetch gets FETCH_SESSION_ID_NOT_FOUND.
  void evict_fetch_sessions(std::int32_t node_id);
  /// Cut each partition's Fetch data at partition_max_bytes even inside a
  /// batch, as brokers before 0.10.1 (KIP-74) did.
  void set_strict_fetch_size(bool on);
  /// Sessions opened so far on a broker.
  int fetch_sessions_opened(std::int32_t node_id) const;
  /// Remove an API from the ApiVersions answer.
  void remove_api(protocol::ApiKey api);

  // ---- faults ----

  void inject(Fault fault);
  /// Shorthand: the next `times` responses of `api` for topic-partition carry `code`.
  void fail_next(protocol::ApiKey api, const std::string& topic, std::int32_t partition, protocol::ErrorCode code,
                 int times = 1);
  /// Faults still queued (not yet consumed).
  std::size_t pending_faults() const;
  void clear_faults();

  // ---- request log ----

  std::vector<RequestRecord> requests() const;
  /// Requests of one API, in arrival order.
  std::vector<RequestRecord> requests(protocol::ApiKey api) const;
  void clear_requests();
  /// Number of connections accepted so far (over all brokers).
  int connections_accepted() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// One line describing a recorded request (for test failure messages).
std::string describe(const RequestRecord& r);

}  // namespace kwire::mock
