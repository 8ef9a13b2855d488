// The classic group member of a Consumer (internal). It owns the group
// state: coordinator, member id, generation, subscription, the partitions
// the group gave this member, heartbeat and auto-commit timers, async
// commits in flight. It never touches fetch positions: it tells its Host
// (the Consumer) which partitions are assigned and where each starts, and
// asks it for the positions to commit (the Fetcher stays their one owner).
//
// One background thread per member (started by the first poll() after
// subscribe, stopped by close() or the destructor) keeps the membership alive
// while the application processes between polls, as the Java consumer's
// heartbeat thread does: it sends Heartbeat (classic) or
// ConsumerGroupHeartbeat (KIP-848) when due over its own KafkaClient (its own
// connections: KafkaClient is single-threaded), and when poll() has not been
// called for max.poll.interval.ms it leaves the group at once (LeaveGroup,
// or a heartbeat at epoch -1; static members send none, or epoch -2). What
// needs the application thread (rebalance listener calls, fetch positions,
// rejoining, reconciling a new KIP-848 assignment) is left to the next
// poll(): the thread only records it (lost_pending_, need_join_,
// pending_assignment_, a fatal error to rethrow). All state is guarded by
// one recursive mutex (recursive: listener callbacks run under it and may
// commit); the thread never holds it across network I/O.
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "coordinators.hpp"
#include "kwire/client/group.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/protocol/errors.hpp"
#include "kwire/protocol/messages/classic_group.hpp"
#include "kwire/protocol/messages/consumer_group_heartbeat.hpp"

namespace kwire::client {

/// Throws the typed error for a group-level error code of `api`.
[[noreturn]] void throw_group_error(const std::string& group, const char* api, std::int16_t code);

class GroupCoordinator {
 public:
  class Host {
   public:
    virtual ~Host() = default;
    /// The next offset to read of each assigned partition whose position is
    /// known (what poll() handed out).
    virtual std::map<TopicPartition, OffsetAndMetadata> consumed() = 0;
    /// Replace the fetched partitions; `start` holds committed offsets (the
    /// others start per auto.offset.reset).
    virtual void assign(const std::vector<TopicPartition>& partitions,
                        const std::map<TopicPartition, OffsetAndMetadata>& start) = 0;
  };
  using CommitCallback =
      std::function<void(const std::map<TopicPartition, OffsetAndMetadata>&, std::exception_ptr error)>;

  GroupCoordinator(KafkaClient& client, GroupConfig config, Host& host);
  ~GroupCoordinator();

  void subscribe(std::vector<std::string> topics, RebalanceListener* listener);
  void subscribe_pattern(const std::string& pattern, RebalanceListener* listener);
  /// Gives up the partitions (revoked) and leaves the group.
  void unsubscribe();
  bool subscribed() const {
    std::lock_guard lock(mu_);
    return subscribed_;
  }
  std::vector<std::string> subscription() const {
    std::lock_guard lock(mu_);
    return topics_;
  }
  std::vector<TopicPartition> owned() const {
    std::lock_guard lock(mu_);
    return owned_;
  }
  std::string member_id() const {
    std::lock_guard lock(mu_);
    return member_id_;
  }
  std::int32_t generation() const {
    std::lock_guard lock(mu_);
    return generation_;
  }
  const GroupConfig& config() const noexcept { return config_; }
  std::uint64_t rebalances() const {
    std::lock_guard lock(mu_);
    return rebalances_;
  }
  /// Heartbeats the background thread sent (each attempt, answered or not).
  std::uint64_t background_heartbeats() const {
    std::lock_guard lock(mu_);
    return background_heartbeats_;
  }

  /// Rejoins when needed (blocking until the rebalance completes),
  /// heartbeats and auto-commits when due, completes async commits. Returns
  /// when it must be called next. Throws FencedInstanceIdError,
  /// GroupAuthorizationError, KafkaError for fatal group errors.
  Clock::time_point poll();

  /// OffsetCommit of `offsets` as this member. Throws CommitFailedError
  /// (fenced: rejoin at the next poll), RebalanceInProgressError,
  /// GroupAuthorizationError, KafkaError naming the partition, TimeoutError.
  void commit_sync(const std::map<TopicPartition, OffsetAndMetadata>& offsets, Deadline deadline);
  /// Sends the commit and returns; `callback` runs from a later poll(),
  /// commit or close() with the outcome.
  void commit_async(const std::map<TopicPartition, OffsetAndMetadata>& offsets, CommitCallback callback);
  /// The group's committed offsets (nullopt: none).
  std::map<TopicPartition, std::optional<OffsetAndMetadata>> committed(const std::vector<TopicPartition>& tps,
                                                                       Deadline deadline);
  /// Auto-commits (when enabled), revokes and leaves (dynamic members),
  /// returning by `deadline` (the commit and the leave are cut short, the
  /// leave being best effort: the session timeout removes the member).
  void close(Deadline deadline);

 private:
  struct PendingCommit {
    std::int32_t node = -1;
    std::int32_t corr = 0;
    std::int16_t version = 0;
    std::map<TopicPartition, OffsetAndMetadata> offsets;
    CommitCallback callback;
    std::exception_ptr error;  // set when sending failed
  };

  std::int32_t coordinator(Deadline deadline);
  std::optional<std::int32_t> cached_coordinator() const {
    return coordinators_.cached(CoordinatorType::group, config_.group_id);
  }
  void coordinator_lost();
  void join(Deadline deadline);
  /// One JoinGroup + SyncGroup: done, or how to try again.
  CoordinatorReply join_round(Deadline deadline);
  std::vector<std::string> current_topics();
  protocol::Bytes subscription_metadata(Assignor a);
  std::vector<protocol::SyncGroupRequest::SyncGroupRequestAssignment> lead(
      const std::string& protocol, const std::vector<protocol::JoinGroupResponse::JoinGroupResponseMember>& members);
  void take_assignment(const std::vector<TopicPartition>& assigned);
  /// With enable.auto.commit, commit what poll() handed out of `revoked`
  /// before they are given up (a failure is a warning, as in Java).
  void commit_before_revoke(const std::vector<TopicPartition>& revoked);
  void leave(const char* reason, Deadline deadline);
  void lose_partitions();
  void revoke_all();
  bool cooperative() const;
  void maybe_auto_commit(bool force, Deadline deadline = Deadline::max());
  void complete_async(bool wait);
  // group.protocol=consumer (group_consumer_protocol.cpp).
  bool consumer_protocol() const { return config_.group_protocol == GroupProtocol::consumer; }
  /// poll(): the joining heartbeat (epoch 0, or a changed subscription),
  /// then what it brought (a fencing, an assignment) acted on.
  void consumer_heartbeat();
  /// The heartbeat for the current state; `md` gives the owned topics' ids.
  protocol::ConsumerGroupHeartbeatRequest consumer_heartbeat_request(const ClusterMetadata& md, std::int16_t version);
  // KIP-848 heartbeats name owned partitions by topic id, taken from `via`'s
  // metadata cache; Metadata is asked only for owned topics whose id the
  // cache does not hold. May throw ConnectionError / TimeoutError.
  static void cache_topic_ids(KafkaClient& via, const std::vector<TopicPartition>& owned);
  /// Applies an answer to a heartbeat sent at the current epoch (state only:
  /// a fencing sets lost_pending_, a new assignment pending_assignment_).
  void consumer_heartbeat_answered(const protocol::ConsumerGroupHeartbeatResponse& r, std::int16_t version);
  /// poll(): reconcile what the background thread received.
  void take_pending_assignment();
  void reconcile(const std::vector<TopicPartition>& target);
  void consumer_leave(Deadline deadline);
  // Heartbeats (group_heartbeat.cpp). One path for both protocols and both
  // threads: heartbeat_once() sends the heartbeat of the current state over
  // `via` and applies the answer with heartbeat_answered(). The background
  // thread sends every regular heartbeat and passes its lock, released
  // during the network exchange; poll() sends only the joining one of
  // KIP-848 (and a commit its epoch refresh), holding the lock throughout.
  struct HeartbeatAnswer {
    bool reached = false;  // false: no coordinator known, a lost connection, or no answer in time
    bool kip848 = false;
    std::int16_t version = 0;
    std::int16_t code = 0;                            // classic Heartbeat
    protocol::ConsumerGroupHeartbeatResponse answer;  // KIP-848
  };
  /// Returns false when the answer no longer applies (the member or its
  /// epoch changed meanwhile) or the coordinator was not reached. The
  /// answer's state is applied (need_join_, lost_pending_,
  /// pending_assignment_, the epoch); fatal group errors are thrown.
  bool heartbeat_once(KafkaClient& via, std::unique_lock<std::recursive_mutex>* unlocked_during_io);
  /// The one rule for a heartbeat's outcome, both protocols.
  void heartbeat_answered(const HeartbeatAnswer& a);
  // The background thread.
  void start_background();
  void stop_background();
  void background_loop();
  void background_heartbeat(std::unique_lock<std::recursive_mutex>& lock);
  void background_leave(std::unique_lock<std::recursive_mutex>& lock);
  /// After a fencing or a poll timeout noticed by the background thread.
  void handle_lost();

  /// Now on the timers' clock (GroupConfig::timer_clock).
  Clock::time_point timer_now() const { return timers_->now(); }
  /// How long in real time until `timer_time` of the timers' clock (0 when
  /// past), at most the clock's recheck_after().
  Clock::duration real_wait(Clock::time_point timer_time) const;

  std::map<TopicPartition, std::int16_t> send_commit(const std::map<TopicPartition, OffsetAndMetadata>& offsets,
                                                     Deadline deadline);

  KafkaClient& client_;
  GroupConfig config_;
  Host& host_;
  std::shared_ptr<TimerClock> timers_;  // next_heartbeat_, next_auto_commit_, last_poll_, pattern_checked_
  RebalanceListener* listener_ = nullptr;
  bool subscribed_ = false;
  std::vector<std::string> topics_;  // as subscribed, or the pattern's current matches
  std::optional<std::regex> pattern_;
  Clock::time_point pattern_checked_{};

  Coordinators coordinators_;  // shared with the background thread
  std::string member_id_;
  std::int32_t generation_ = -1;  // classic: generation; consumer protocol: member epoch
  std::string protocol_;          // assignor chosen by the group
  bool need_join_ = true;
  std::vector<TopicPartition> owned_;
  std::uint64_t rebalances_ = 0;

  Clock::time_point next_heartbeat_{};
  Clock::time_point next_auto_commit_{};
  Clock::time_point last_poll_{};
  std::vector<std::unique_ptr<PendingCommit>> pending_;

  mutable std::recursive_mutex mu_;
  std::condition_variable_any wake_;
  std::unique_ptr<KafkaClient> background_client_;  // used by the background thread only
  std::thread background_;
  bool stopping_ = false;
  bool lost_pending_ = false;  // owned_ must be given up as lost by the next poll()
  std::optional<protocol::ConsumerGroupHeartbeatResponse::Assignment> pending_assignment_;
  std::exception_ptr background_error_;  // rethrown by the next poll()
  std::uint64_t background_heartbeats_ = 0;
};

}  // namespace kwire::client
