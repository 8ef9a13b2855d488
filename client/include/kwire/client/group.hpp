// Consumer groups with the classic protocol (JoinGroup / SyncGroup /
// Heartbeat, KIP-62 timeouts, KIP-345 static membership, KIP-429
// cooperative rebalancing): the settings, the rebalance listener, the
// client-side assignors and the group's typed errors. Consumer::subscribe()
// (consumer.hpp) uses them.
//
// Settings, by their Java names and with the Java consumer's defaults:
//   group.id                       required for subscribe() and commits
//   group.instance.id              static member id (KIP-345), unset = dynamic
//   group.protocol                 "classic" (default) or "consumer" (KIP-848:
//                                  the coordinator assigns, see below)
//   group.remote.assignor          consumer protocol: the broker's assignor
//                                  ("uniform", "range"); unset = broker default
//   partition.assignment.strategy  comma list, first preferred: range,
//                                  roundrobin, cooperative-sticky (Java class
//                                  names such as org.apache.kafka.clients.
//                                  consumer.RangeAssignor are accepted);
//                                  default "range,cooperative-sticky"
//   session.timeout.ms 45000, heartbeat.interval.ms 3000,
//   max.poll.interval.ms 300000, enable.auto.commit true,
//   auto.commit.interval.ms 5000
//
// group.protocol=consumer (KIP-848, Kafka 4.0+ or 3.8/3.9 with the protocol
// enabled on the broker): membership is one ConsumerGroupHeartbeat loop at
// the interval the broker sets; the broker computes the assignment and hands
// it out incrementally: a partition moving away is revoked (committed when
// auto-commit is on, listener revoked) and acknowledged by the next heartbeat
// before its new owner gets it, while the other members keep consuming. As
// in Java, session.timeout.ms, heartbeat.interval.ms and
// partition.assignment.strategy are rejected with it (the broker's
// group.consumer.* settings apply).
//
// Free of Boost.Asio.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kwire/client/errors.hpp"
#include "kwire/client/timer_clock.hpp"
#include "kwire/client/types.hpp"

namespace kwire::client {

/// Java's ConsumerRebalanceListener, called from inside poll() (and close()).
///  - revoked: before a rebalance gives partitions up (eager: everything
///    owned, every rebalance; cooperative: only those moving away, and only
///    when non-empty). Commit here: the partitions are still owned.
///  - assigned: after each rebalance (eager: the whole new assignment, even
///    empty; cooperative: only the partitions added).
///  - lost: the member was fenced or fell out of the group; the partitions
///    may already belong to another member, so do not commit. Defaults to
///    revoked, as in Java.
class RebalanceListener {
 public:
  virtual ~RebalanceListener() = default;
  virtual void on_partitions_revoked(const std::vector<TopicPartition>& partitions) { (void)partitions; }
  virtual void on_partitions_assigned(const std::vector<TopicPartition>& partitions) { (void)partitions; }
  virtual void on_partitions_lost(const std::vector<TopicPartition>& partitions) { on_partitions_revoked(partitions); }
};

/// A committed offset: the next offset to read, with the leader epoch of the
/// last record read (-1 unknown) and free-form metadata.
struct OffsetAndMetadata {
  std::int64_t offset = -1;
  std::int32_t leader_epoch = -1;
  std::string metadata;
  friend bool operator==(const OffsetAndMetadata&, const OffsetAndMetadata&) = default;
};

enum class Assignor { range, roundrobin, cooperative_sticky };
/// The JoinGroup protocol name of an assignor ("range", "roundrobin", "cooperative-sticky").
const char* assignor_name(Assignor a);

enum class GroupProtocol { classic, consumer };

struct GroupConfig {
  std::string group_id;
  GroupProtocol group_protocol = GroupProtocol::classic;
  std::optional<std::string> group_remote_assignor;
  std::optional<std::string> group_instance_id;
  std::vector<Assignor> assignors{Assignor::range, Assignor::cooperative_sticky};
  std::int32_t session_timeout_ms = 45000;
  std::int32_t heartbeat_interval_ms = 3000;
  std::int32_t max_poll_interval_ms = 300000;
  bool enable_auto_commit = true;
  std::int32_t auto_commit_interval_ms = 5000;
  /// The clock the timers above read (TimerClock); null: the steady clock.
  /// Not a property: set with Consumer::set_group_timer_clock.
  std::shared_ptr<TimerClock> timer_clock;

  /// Reads the keys above from Java-style properties (others are ignored).
  /// Throws ConfigError naming the key for a bad value, an unknown assignor
  /// or group.protocol, or a classic-only key with group.protocol=consumer.
  static GroupConfig from_properties(const std::map<std::string, std::string>& properties);
};

/// One member as the group leader sees it (its ConsumerProtocolSubscription).
struct MemberSubscription {
  std::string member_id;
  std::optional<std::string> group_instance_id;
  std::vector<std::string> topics;
  std::vector<TopicPartition> owned;  // v1+: partitions the member holds now
  std::int32_t generation = -1;       // v2+: generation of `owned`
};

/// member id -> its partitions (every member present, possibly empty).
using GroupAssignment = std::map<std::string, std::vector<TopicPartition>>;

/// The assignors, as the Java client's (topics the cluster does not know,
/// i.e. missing from `partitions_per_topic`, are skipped). Members are
/// ordered by group.instance.id when set, else member id, as in Java.
///  - range: per topic, contiguous ranges; the first members get one more.
///  - roundrobin: all subscribed partitions sorted by topic and partition,
///    dealt to the members in turn, skipping members not subscribed.
///  - cooperative_sticky: balanced (counts differ by at most one among
///    members subscribed alike), keeps each member's owned partitions where
///    balance allows, and, as KIP-429 requires, leaves out of this round any
///    partition that moves from one live owner to another (it is assigned in
///    the follow-up rebalance, after its owner revoked it).
GroupAssignment assign_partitions(Assignor assignor, const std::vector<MemberSubscription>& members,
                                  const std::map<std::string, std::int32_t>& partitions_per_topic);

/// REBALANCE_IN_PROGRESS (or, with group.protocol=consumer, STALE_MEMBER_EPOCH)
/// on a commit: retriable once the rebalance completed (next poll).
class RebalanceInProgressError : public KafkaError {
 public:
  using KafkaError::KafkaError;
};
/// A commit refused because the member is no longer part of the group's
/// current generation (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID): its partitions
/// may belong to another member; poll() rejoins.
class CommitFailedError : public KafkaError {
 public:
  using KafkaError::KafkaError;
};
/// GROUP_AUTHORIZATION_FAILED: the principal may not use the group.
class GroupAuthorizationError : public KafkaError {
 public:
  using KafkaError::KafkaError;
};
/// FENCED_INSTANCE_ID: another process joined with the same group.instance.id.
class FencedInstanceIdError : public KafkaError {
 public:
  using KafkaError::KafkaError;
};

}  // namespace kwire::client
