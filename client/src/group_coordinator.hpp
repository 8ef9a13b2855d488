// The classic group member of a Consumer (internal). It owns the group
// state: coordinator, member id, generation, subscription, the partitions
// the group gave this member, heartbeat and auto-commit timers, async
// commits in flight. It never touches fetch positions: it tells its Host
// (the Consumer) which partitions are assigned and where each starts, and
// asks it for the positions to commit (the Fetcher stays their one owner).
//
// There is no background thread: heartbeats, rebalances and auto-commits
// happen inside poll() (and commit/close), so an application must poll more
// often than session.timeout.ms; a gap over max.poll.interval.ms is noticed
// at the next poll(), which then gives the partitions up as lost, leaves and
// rejoins (the Java consumer's heartbeat thread leaves at once).
#pragma once

#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "kwire/client/group.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/protocol/messages/classic_group.hpp"

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
  bool subscribed() const noexcept { return subscribed_; }
  std::vector<std::string> subscription() const { return topics_; }
  std::vector<TopicPartition> owned() const { return owned_; }
  const std::string& member_id() const noexcept { return member_id_; }
  std::int32_t generation() const noexcept { return generation_; }
  const GroupConfig& config() const noexcept { return config_; }
  std::uint64_t rebalances() const noexcept { return rebalances_; }

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
  /// Auto-commits (when enabled), revokes and leaves (dynamic members).
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
  void coordinator_lost();
  void join(Deadline deadline);
  bool join_round(Deadline deadline);  // false: retry
  std::vector<std::string> current_topics();
  protocol::Bytes subscription_metadata(Assignor a);
  std::vector<protocol::SyncGroupRequest::SyncGroupRequestAssignment> lead(
      const std::string& protocol, const std::vector<protocol::JoinGroupResponse::JoinGroupResponseMember>& members);
  void take_assignment(const std::vector<TopicPartition>& assigned);
  /// With enable.auto.commit, commit what poll() handed out of `revoked`
  /// before they are given up (a failure is a warning, as in Java).
  void commit_before_revoke(const std::vector<TopicPartition>& revoked);
  void heartbeat();
  void leave(const char* reason);
  void lose_partitions();
  void revoke_all();
  bool cooperative() const;
  void maybe_auto_commit(bool force);
  void complete_async(bool wait);
  // group.protocol=consumer (group_consumer_protocol.cpp).
  bool consumer_protocol() const { return config_.group_protocol == GroupProtocol::consumer; }
  void consumer_heartbeat();
  void reconcile(const std::vector<TopicPartition>& target);
  void consumer_leave();

  std::map<TopicPartition, std::int16_t> send_commit(const std::map<TopicPartition, OffsetAndMetadata>& offsets,
                                                     Deadline deadline);

  KafkaClient& client_;
  GroupConfig config_;
  Host& host_;
  RebalanceListener* listener_ = nullptr;
  bool subscribed_ = false;
  std::vector<std::string> topics_;  // as subscribed, or the pattern's current matches
  std::optional<std::regex> pattern_;
  Clock::time_point pattern_checked_{};

  std::int32_t coordinator_ = -1;
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
};

}  // namespace kwire::client
