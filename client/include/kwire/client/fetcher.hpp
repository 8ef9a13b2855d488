// The Fetcher: the one owner of fetch positions.
//
// It keeps, per assigned partition, the position (the next offset to hand
// out, as Java's position()), the leader epoch of the last record handed out,
// the paused flag, the retry back-off, a fetch-size override for a batch
// larger than max.partition.fetch.bytes, and the answers fetched but not yet
// handed out; per broker, the KIP-227 fetch session and the one Fetch in
// flight (a session allows no more). A position moves only when records are
// handed out by poll() (or by seek() and offset resets).
//
// It talks to the cluster through FetchCluster (leader and leader epoch of a
// partition, topic id <-> name, sending a Fetch to a node and waiting for the
// answer, ListOffsets, OffsetsForLeaderEpoch), which KafkaClient implements
// over its connections and a fake implements in unit tests.
//
// Rules (the Java consumer's, KAFKA-5078 and KIP-320):
//  - Results are per partition. Records decoded before a corrupt batch are
//    handed out first; the partition's CorruptBatchError is raised by the
//    poll after (or by this one when it has no records to return), once; the
//    position stays at the bad batch, and the other partitions keep flowing.
//  - A partition listed twice in one answer is taken once (the later entry);
//    partitions not asked for are ignored; no record below a partition's
//    position is ever handed out.
//  - Fetch carries current_leader_epoch (from metadata, v9+) and
//    last_fetched_epoch (v12+). Errors that say the partition is being moved
//    or its metadata is stale (NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH,
//    UNKNOWN_LEADER_EPOCH, UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID,
//    INCONSISTENT_TOPIC_ID, KAFKA_STORAGE_ERROR, REPLICA_NOT_AVAILABLE,
//    LEADER_NOT_AVAILABLE, OFFSET_NOT_AVAILABLE, UNKNOWN_SERVER_ERROR; no
//    leader known) refresh metadata and retry at the same position for as
//    long as they last, as the Java consumer's AbstractFetch does: they never
//    reach poll(). Each retry waits the client's back-off (retry.backoff.ms
//    doubling, +-20 % jitter, at most retry.backoff.max.ms; KIP-580). Other
//    retriable errors are retried `retries` times, then poll() throws
//    KafkaError naming the partition; any other error is raised at once. A
//    caller that needs progress bounds its own wait (the source's
//    kafkaConsumer.pollTimeoutMs).
//  - KIP-951: NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH answers that
//    name a newer leader (with its endpoint from v16) move the partition
//    there at once, without a Metadata request.
//  - Topic ids (KIP-516, Fetch v13+): a partition whose topic id changes
//    (the topic was deleted and created again) drops what was fetched from
//    the old topic, is forgotten under the old id and listed under the new
//    one in the next incremental request, and is fetched from its position
//    without the old topic's leader epochs: a position past the new log's
//    end is out of range (auto.offset.reset; OffsetOutOfRangeError with
//    "none").
//  - When a partition's leader epoch moves on, its position is validated with
//    OffsetsForLeaderEpoch before it is fetched again. A log that ends, for
//    the epoch of the last record handed out, below the position was
//    truncated: LogTruncationError with auto.offset.reset=none, else the
//    position moves to the divergent offset (Java's behaviour). A Fetch answer
//    with diverging_epoch (v12+) is handled the same way.
//  - Follower fetching (KIP-392): Fetch carries client.rack (v11+). When the
//    leader answers with a preferred_read_replica, the partition is fetched
//    from that node until metadata.max.age.ms has passed since; any error
//    from the follower, its connection failing, or OFFSET_OUT_OF_RANGE from it
//    (a lagging follower; no offset reset then) send it back to the leader
//    after a back-off, as the Java consumer does. Positions stay here either
//    way.
//  - Pipelining: when a leader's answer arrives, its next Fetch goes out at
//    once (from the offsets after the complete batches just received) before
//    the records are decoded and handed out. At most two answers per
//    partition are held (the one being handed out and the next), so the
//    fetched bytes held are bounded by the fetch sizes. An answer is decoded
//    a part at a time as it is handed out (whole batches, about one poll's
//    max_records), so the decoded records and decompressed bytes held stay
//    bounded too, however well the batches compress (a 1 MiB answer of
//    repetitive records can hold hundreds of MiB once decompressed).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "kwire/client/config.hpp"
#include "kwire/client/records.hpp"
#include "kwire/client/types.hpp"
#include "kwire/protocol/messages/fetch.hpp"

namespace kwire::client {

/// What the Fetcher needs of the cluster. Implemented by KafkaClient.
class FetchCluster {
 public:
  virtual ~FetchCluster() = default;

  struct Leader {
    std::int32_t node = -1;   // -1: none known
    std::int32_t epoch = -1;  // leader epoch from metadata (-1: unknown)
    /// Why there is no leader (UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE), 0 otherwise.
    std::int16_t error_code = 0;
  };
  /// The leader of a partition from the metadata cache (refreshing it once
  /// when the partition is unknown).
  virtual Leader leader(const TopicPartition& tp) = 0;
  /// Refresh metadata for these topics. May throw ClientError.
  virtual void refresh_metadata(const std::vector<std::string>& topics) = 0;
  /// KIP-951: a Fetch answer named the partition's new leader (and, from
  /// v16, its endpoint). Taken when its epoch is newer than the one known and
  /// the node can be reached; returns whether it was (no Metadata needed then).
  virtual bool new_leader(const TopicPartition& tp, std::int32_t leader_id, std::int32_t leader_epoch,
                          const protocol::FetchResponse::NodeEndpoint* endpoint) {
    (void)tp, (void)leader_id, (void)leader_epoch, (void)endpoint;
    return false;
  }
  /// Topic id of a topic (nullopt while unknown), and the name of an id.
  virtual std::optional<protocol::Uuid> topic_id(const std::string& topic) = 0;
  virtual const std::string* topic_name(const protocol::Uuid& id) = 0;

  /// The Fetch version to use with a node (connecting if needed). Throws ConnectionError.
  virtual std::int16_t fetch_version(std::int32_t node) = 0;
  /// Send a Fetch; returns a token for receive_fetch(). Throws ConnectionError.
  virtual std::int32_t send_fetch(std::int32_t node, const protocol::FetchRequest& request, std::int16_t version) = 0;
  struct Pending {
    std::int32_t node = -1;
    std::int32_t token = 0;
    Deadline deadline{};  // the answer is late after this
  };
  /// Wait until one of `pending` is answered, its connection is gone, or its
  /// deadline passed; returns its index, or nullopt when none by `until`
  /// (what is already there is looked at even when `until` has passed).
  virtual std::optional<std::size_t> wait_any(const std::vector<Pending>& pending, Deadline until) = 0;
  /// The answer to a sent Fetch. Throws ConnectionError (connection lost or
  /// replaced), TimeoutError (late: the connection is closed).
  virtual Response<protocol::FetchResponse> receive_fetch(const Pending& pending, std::int16_t version) = 0;

  /// ListOffsets (see KafkaClient::list_offsets). Throws KafkaError.
  virtual std::map<TopicPartition, ListedOffset> list_offsets(
      const std::map<TopicPartition, std::int64_t>& targets) = 0;

  struct EpochQuery {
    std::int32_t current_leader_epoch = -1;  // fences a stale leader
    std::int32_t leader_epoch = -1;          // the epoch whose end offset is asked for
  };
  struct EpochEndOffset {
    std::int16_t error_code = 0;
    std::int32_t leader_epoch = -1;  // the largest epoch <= the one asked for (-1: undefined)
    std::int64_t end_offset = -1;    // its end offset (-1: undefined)
  };
  /// OffsetsForLeaderEpoch to a node (KIP-320). Throws ConnectionError,
  /// UnsupportedVersionError.
  virtual std::map<TopicPartition, EpochEndOffset> offsets_for_leader_epoch(
      std::int32_t node, const std::map<TopicPartition, EpochQuery>& queries) = 0;
  /// From now on, every call above ends by `until` at the latest (throwing
  /// TimeoutError when cut short); Deadline::max() lifts the bound. Returns
  /// the bound it replaces. Fetcher::poll bounds its calls by its deadline.
  virtual Deadline bound_deadlines(Deadline until) {
    (void)until;
    return Deadline::max();
  }
};

/// auto.offset.reset
enum class OffsetResetPolicy { earliest, latest, none };
/// Parses "earliest" | "latest" | "none" (and librdkafka's aliases smallest,
/// beginning, largest, end). Throws ConfigError naming the value.
OffsetResetPolicy parse_offset_reset(const std::string& value);

class Fetcher {
 public:
  Fetcher(FetchCluster& cluster, const ClientConfig& config, OffsetResetPolicy reset);
  ~Fetcher();
  Fetcher(const Fetcher&) = delete;
  Fetcher& operator=(const Fetcher&) = delete;

  /// Replace the assignment; partitions kept keep their position and state.
  void assign(const std::vector<TopicPartition>& partitions);
  std::vector<TopicPartition> assignment() const;
  /// Move the position (drops what was fetched for the partition). Throws
  /// ClientError when not assigned or offset < 0.
  void seek(const TopicPartition& tp, std::int64_t offset, std::int32_t leader_epoch = -1);
  /// The position; nullopt when not known yet. Throws ClientError when not assigned.
  std::optional<std::int64_t> position(const TopicPartition& tp) const;
  /// Resolve unknown positions with auto.offset.reset (ListOffsets); with
  /// "none" throws OffsetOutOfRangeError naming the partition.
  void resolve_positions();
  void pause(const std::vector<TopicPartition>& tps);
  void resume(const std::vector<TopicPartition>& tps);
  bool paused(const TopicPartition& tp) const;
  /// Hand out records of `tp` below `limit` only (nullopt: no limit). poll()
  /// stops the partition at the limit and keeps what was fetched past it for
  /// when the limit is raised or removed, so a reader of consecutive offset
  /// ranges neither drops nor fetches again what it read ahead. Fetching
  /// goes on as for any unpaused partition. Throws ClientError when the
  /// partition is not assigned.
  void set_position_limit(const TopicPartition& tp, std::optional<std::int64_t> limit);

  /// Wait up to `timeout` for records of the assigned, unpaused partitions;
  /// at most `max_records`. Throws the errors listed above (per partition)
  /// and KafkaError for top-level Fetch errors. A Fetch lost with its
  /// connection or unanswered within request.timeout.ms is, as in Java's
  /// consumer, a disconnect: its partitions back off and are fetched again.
  ///
  /// Returns by its deadline, or kMinBlockingWork after it started when that
  /// is later, whatever the network does (as Java's poll(Duration)):
  /// Metadata, ListOffsets and OffsetsForLeaderEpoch requests are given up
  /// then and asked again by the next poll; a connection being set up (TCP
  /// connect, ApiVersions) is taken up again where it was. Only when the
  /// cluster has answered none of them for default.api.timeout.ms across
  /// polls does poll throw TimeoutError.
  ConsumerRecords poll(std::chrono::milliseconds timeout, std::size_t max_records);
  /// What a poll with a shorter timeout may still spend on the requests it
  /// must block on (one round trip each), so that short polls make progress.
  static constexpr std::chrono::milliseconds kMinBlockingWork{1000};

  /// The last Fetch answer's offsets for a partition (no error ones).
  std::optional<FetchedPartition> last_fetch_info(const TopicPartition& tp) const;
  /// The fetch session open with a node, as {session id, epoch of the next
  /// request}; nullopt when none is open.
  std::optional<std::pair<std::int32_t, std::int32_t>> fetch_session(std::int32_t node) const;
  /// The follower a partition is being fetched from (KIP-392), nullopt when
  /// it is fetched from its leader.
  std::optional<std::int32_t> read_replica(const TopicPartition& tp) const;
  /// Whether a Fetch is in flight to any node.
  bool fetch_in_flight() const noexcept { return !in_flight_.empty(); }

 private:
  struct Answer;
  struct PartitionState;
  struct Session;
  struct InFlight;

  PartitionState& state(const TopicPartition& tp);
  const PartitionState* find(const TopicPartition& tp) const;
  std::optional<std::int64_t> fetch_offset(const PartitionState& s) const;
  std::optional<Clock::time_point> next_retry(Clock::time_point now) const;
  void send_fetches();
  void validate_positions();
  bool take_answer(Deadline until);
  void take_partition(const TopicPartition& tp, const InFlight& f, protocol::FetchResponse::PartitionData& p,
                      const std::shared_ptr<const protocol::Bytes>& frame,
                      const std::vector<protocol::FetchResponse::NodeEndpoint>& endpoints,
                      std::vector<std::string>& refresh);
  ConsumerRecords collect(std::size_t max_records);
  ConsumerRecords poll_until(Deadline deadline, std::size_t max_records);
  void push_error(const TopicPartition& tp, PartitionState& s, std::exception_ptr error);
  void enqueue(const TopicPartition& tp, PartitionState& s);
  void back_off(const TopicPartition& tp, PartitionState& s, std::int16_t error_code, bool counts);
  bool topic_recreated(const TopicPartition& tp, PartitionState& s);
  void truncated(const TopicPartition& tp, PartitionState& s, std::int64_t divergent_offset,
                 std::int32_t divergent_epoch);
  void decode(const TopicPartition& tp, PartitionState& s, Answer& a, std::size_t max_records);
  std::shared_ptr<protocol::DecodedRecords> reusable_decoded();
  std::shared_ptr<ConsumerRecords::Round> reusable_round();

  FetchCluster& cluster_;
  ClientConfig config_;
  OffsetResetPolicy reset_;
  // Since when polls have been cut short by their deadline without an answer
  // (see poll()); nullopt once a poll completes.
  std::optional<Clock::time_point> unanswered_since_;
  std::map<TopicPartition, std::unique_ptr<PartitionState>> partitions_;
  std::map<std::int32_t, std::unique_ptr<Session>> sessions_;    // by node
  std::map<std::int32_t, std::unique_ptr<InFlight>> in_flight_;  // by node
  // Partitions with answers to hand out, in the order they arrived.
  std::deque<TopicPartition> ready_;
  std::vector<std::shared_ptr<protocol::DecodedRecords>> decoded_pool_;
  // Rounds handed out earlier, reused once their records are released: a
  // round's record array is megabytes, which a fresh allocation takes as
  // fresh pages from the kernel.
  std::vector<std::shared_ptr<ConsumerRecords::Round>> round_pool_;
  // The most records one poll has handed out: a poll's room is made for as
  // many at once (no doubling series while records are appended).
  std::size_t last_round_size_ = 0;
};

}  // namespace kwire::client
