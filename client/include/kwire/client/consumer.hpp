// A Java-style consumer without a group: assign partitions, seek, poll with a
// timeout and get records back. Positions are the next offset to read, as in
// the Java client's position().
//
// auto.offset.reset (earliest | latest | none; default latest, as in Java)
// decides what happens when a position is unknown or out of range; with
// "none" poll() throws OffsetOutOfRangeError naming the partition and offset.
//
// The fetching is done by a Fetcher (fetcher.hpp), the one owner of the
// positions; its rules apply: errors are per partition (records before a
// corrupt batch are handed out first, then CorruptBatchError for that
// partition alone; the others keep flowing); a partition whose fetch fails
// with a retriable error (leadership moved, connection lost...) backs off
// (retry.backoff.ms, doubling, at most 1 s) and resumes at the same position,
// and after `retries` consecutive broker errors on one partition poll()
// throws KafkaError naming it; leader epochs are sent and checked (KIP-320),
// a truncated log raising LogTruncationError with auto.offset.reset=none.
// With client.rack set, a partition is read from the follower its leader
// names (KIP-392) until metadata.max.age.ms passes or that follower fails.
//
// Fetches are pipelined, as in the Java client and librdkafka: when a
// leader's Fetch answer arrives, the next Fetch to that leader goes out at once
// (from the offsets after the records just received), before the records are
// decoded and handed out. At most one Fetch per leader is in flight (a KIP-227
// fetch session allows no more) and at most two answers per partition are
// held. A Fetch may outlive the poll() that sent it (it waits up to
// fetch.max.wait.ms on the broker); its answer is used only for partitions
// still assigned, not paused and at the offset it was sent for: after seek(),
// pause() or assign() that data is dropped and fetched again from the
// partition's position, so nothing is lost or repeated.
//
// Consumer groups (group.id, classic protocol): subscribe() joins the group
// and poll() takes part in it: rebalances (with the rebalance listener's
// calls), heartbeats, automatic commits of what poll() handed out
// (enable.auto.commit), and the start of each newly assigned partition at the
// group's committed offset, or per auto.offset.reset when there is none. See
// group.hpp for the settings and errors. A background thread (its own
// connection to the coordinator) heartbeats between polls, so processing may
// outlast session.timeout.ms; a poll() gap beyond max.poll.interval.ms makes
// the member leave the group at once, and the next poll() gives its
// partitions up as lost and rejoins. Listener calls happen only inside
// poll() and close().
//
// Not thread-safe. Free of Boost.Asio: including this header needs only the
// standard library and kwire's headers.
#pragma once

#include <chrono>
#include <exception>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kwire/client/fetcher.hpp"
#include "kwire/client/group.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/client/records.hpp"

namespace kwire::client {

class GroupCoordinator;

class Consumer {
 public:
  /// Properties by Java names (bootstrap.servers, fetch.max.bytes, auto.offset.reset, ...).
  /// Properties written inline: Consumer x({{"bootstrap.servers", "host:9092"}}).
  Consumer(std::initializer_list<std::pair<const std::string, std::string>> properties)
      : Consumer(std::map<std::string, std::string>(properties)) {}
  explicit Consumer(const std::map<std::string, std::string>& properties);
  explicit Consumer(ClientConfig config, std::string auto_offset_reset = "latest");
  ~Consumer();

  /// Throws ClientError while subscribed (as Java's IllegalStateException).
  void assign(const std::vector<TopicPartition>& partitions);
  std::vector<TopicPartition> assignment() const;
  /// Throws ClientError when the partition is not assigned or offset < 0.
  void seek(const TopicPartition& tp, std::int64_t offset);
  void seek_to_beginning(const std::vector<TopicPartition>& tps);
  void seek_to_end(const std::vector<TopicPartition>& tps);
  /// Next offset to read; resolves it with auto.offset.reset when unknown.
  std::int64_t position(const TopicPartition& tp);
  /// The position when one is known, without resolving it (nullopt for a
  /// partition just assigned, or reset after OFFSET_OUT_OF_RANGE). Throws
  /// ClientError when the partition is not assigned.
  std::optional<std::int64_t> known_position(const TopicPartition& tp) const;
  /// Stop fetching a partition (e.g. once a range end is reached) / resume
  /// it. Nothing of a paused partition is returned; records received for it
  /// before the pause are kept and returned after resume(), as in Java.
  void pause(const std::vector<TopicPartition>& tps);
  void resume(const std::vector<TopicPartition>& tps);
  /// Return records of `tp` below `limit` only (nullopt: no limit). poll()
  /// stops the partition there and keeps what was fetched past it for when
  /// the limit is raised or removed (a reader of consecutive offset ranges
  /// then neither drops nor fetches again what was read ahead); the position
  /// moves up to the limit at most. Throws ClientError when not assigned.
  void set_position_limit(const TopicPartition& tp, std::optional<std::int64_t> limit);

  /// Wait up to `timeout` for records from the assigned, unpaused partitions.
  /// Returns at most max.poll.records records (empty on timeout).
  ConsumerRecords poll(std::chrono::milliseconds timeout);

  std::map<TopicPartition, std::int64_t> beginning_offsets(const std::vector<TopicPartition>& tps);
  std::map<TopicPartition, std::int64_t> end_offsets(const std::vector<TopicPartition>& tps);
  /// Earliest offset whose timestamp >= the given one; nullopt where none.
  std::map<TopicPartition, std::optional<ListedOffset>> offsets_for_times(
      const std::map<TopicPartition, std::int64_t>& timestamps);
  /// High watermark / last stable offset / log start offset from the last
  /// fetch, and the node that answered it.
  std::optional<FetchedPartition> last_fetch_info(const TopicPartition& tp) const;
  /// The incremental fetch session (KIP-227) open with a broker, as
  /// {session id, epoch of the next request}; nullopt when none is open.
  std::optional<std::pair<std::int32_t, std::int32_t>> fetch_session(std::int32_t node_id) const;

  /// The follower a partition is read from (client.rack and KIP-392), nullopt
  /// while it is read from its leader.
  std::optional<std::int32_t> read_replica(const TopicPartition& tp) const;

  // ---------------------------------------------------------------- groups

  /// Join group.id with these topics (replaces an earlier subscription); the
  /// group assigns partitions at the next poll(). `listener` (may be null)
  /// must outlive the subscription. Throws ConfigError without group.id, and
  /// ClientError after assign() without unassigning (assign({})) first.
  void subscribe(const std::vector<std::string>& topics, RebalanceListener* listener = nullptr);
  /// As subscribe(), for every topic whose whole name matches the ECMAScript
  /// regular expression (checked again every metadata.max.age.ms).
  void subscribe_pattern(const std::string& pattern, RebalanceListener* listener = nullptr);
  /// Revokes the partitions (auto-committing first when enabled) and leaves.
  void unsubscribe();
  /// Topics subscribed (a pattern's current matches); empty when not subscribed.
  std::vector<std::string> subscription() const;
  /// The clock the group member's timers read (TimerClock: heartbeat.interval.ms,
  /// max.poll.interval.ms, auto.commit.interval.ms), for tests that move time
  /// by hand. Before the first subscribe() or group call; ClientError after.
  void set_group_timer_clock(std::shared_ptr<TimerClock> clock);

  using CommitCallback =
      std::function<void(const std::map<TopicPartition, OffsetAndMetadata>&, std::exception_ptr error)>;
  /// Commit the positions of every assigned partition (what poll() handed
  /// out), or the given offsets, and wait. Errors: CommitFailedError,
  /// RebalanceInProgressError, GroupAuthorizationError, KafkaError naming
  /// the partition, TimeoutError (default.api.timeout.ms).
  void commit_sync();
  void commit_sync(const std::map<TopicPartition, OffsetAndMetadata>& offsets);
  /// Send the commit and return; `callback` (may be null) runs from a later
  /// poll(), commit or close() with the outcome.
  void commit_async(CommitCallback callback = nullptr);
  void commit_async(const std::map<TopicPartition, OffsetAndMetadata>& offsets, CommitCallback callback);
  /// The group's committed offsets (nullopt where none).
  std::map<TopicPartition, std::optional<OffsetAndMetadata>> committed(const std::vector<TopicPartition>& tps);

  struct GroupMetadata {
    std::string group_id;
    std::string member_id;  // "" before the first join
    std::int32_t generation = -1;
    std::optional<std::string> group_instance_id;
  };
  GroupMetadata group_metadata() const;
  /// Rebalances completed by this member so far.
  std::uint64_t rebalance_count() const;

  /// Completes async commits, auto-commits (when enabled), calls the
  /// listener's revoked and leaves the group (static members stay until
  /// their session times out). The destructor does the same when close()
  /// was not called, swallowing errors. Takes at most default.api.timeout.ms.
  void close();
  /// close() returning by `timeout` even when the coordinator does not
  /// answer (the final commit and the leave are then cut short; the
  /// session timeout removes the member).
  void close(std::chrono::milliseconds timeout);

  KafkaClient& client() noexcept { return *client_; }

 private:
  class GroupHost;
  GroupCoordinator& group();

  std::unique_ptr<KafkaClient> client_;
  std::unique_ptr<Fetcher> fetcher_;  // declared after client_: destroyed first
  GroupConfig group_config_;
  std::unique_ptr<GroupHost> group_host_;
  std::unique_ptr<GroupCoordinator> group_;  // destroyed before the Fetcher
  bool closed_ = false;
};

}  // namespace kwire::client
