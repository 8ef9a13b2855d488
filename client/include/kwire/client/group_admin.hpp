// Consumer group administration, as Kafka's Admin client and the
// kafka-consumer-groups tool do it: list the groups, describe one (state,
// members, their assignments, committed offsets), and alter a group's
// committed offsets (reset; only while the group has no members, which the
// coordinator enforces).
//
// Requests: ListGroups (every broker), FindCoordinator, DescribeGroups
// (ConsumerGroupDescribe for KIP-848 groups, which DescribeGroups does not
// know), OffsetFetch, OffsetCommit (outside any generation: member id empty,
// generation -1). Coordinator moves and loads (NOT_COORDINATOR,
// COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS) and lost
// connections are retried with the client's back-off (retry.backoff.ms,
// doubling up to retry.backoff.max.ms, KIP-580) until default.api.timeout.ms,
// then TimeoutError. Other error codes raise KafkaError naming the group
// (and partition); GROUP_AUTHORIZATION_FAILED raises GroupAuthorizationError.
//
// Uses the KafkaClient it is given (not thread-safe, like it). Free of Boost.Asio.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kwire/client/group.hpp"
#include "kwire/client/types.hpp"

namespace kwire::client {

class KafkaClient;
class Coordinators;

/// One group as ListGroups reports it (state and type are empty when the
/// broker is too old to say: ListGroups v4 / v5).
struct GroupListing {
  std::string group_id;
  std::string state;          // e.g. "Stable", "Empty"
  std::string type;           // "classic" or "consumer" (KIP-848)
  std::string protocol_type;  // "consumer" for consumer groups
};

struct GroupMemberDescription {
  std::string member_id;
  std::optional<std::string> group_instance_id;
  std::string client_id;
  std::string host;
  std::vector<TopicPartition> assignment;  // sorted; empty unless the group's protocol type is "consumer"
  // group.protocol=consumer groups only (ConsumerGroupDescribe, KIP-848):
  /// The member's epoch; nullopt for a classic group.
  std::optional<std::int32_t> member_epoch;
  /// What the group's assignor wants the member to own once it has
  /// reconciled (equal to `assignment` when it has); sorted.
  std::vector<TopicPartition> target_assignment;
  std::vector<std::string> subscribed_topics;  // as the member sent them
  std::optional<std::string> rack;
};

struct GroupDescription {
  std::string group_id;
  std::string state;          // e.g. "Stable", "Empty"; "Dead" when the coordinator does not know the group
  std::string protocol_type;  // "consumer" for consumer groups
  std::string assignor;       // the chosen assignor (classic), may be empty
  std::vector<GroupMemberDescription> members;
  /// KIP-848 groups: the group's epoch (bumped by every membership or
  /// subscription change) and the epoch of its current target assignment
  /// (behind the group epoch while the assignor has not run); nullopt for a
  /// classic group.
  std::optional<std::int32_t> group_epoch;
  std::optional<std::int32_t> assignment_epoch;
  /// Every partition with a committed offset (the next offset to read).
  std::map<TopicPartition, std::int64_t> committed;
};

class GroupAdmin {
 public:
  explicit GroupAdmin(KafkaClient& client);
  ~GroupAdmin();

  /// The groups of every broker, sorted by id.
  std::vector<GroupListing> list_groups();
  /// State, members and assignments (DescribeGroups) and committed offsets
  /// (OffsetFetch of all partitions).
  GroupDescription describe_group(const std::string& group);
  /// The group's committed offset of each partition that has one
  /// (every partition when `partitions` is empty). `require_stable` (KIP-447,
  /// OffsetFetch v7+): offsets a transaction still holds are waited for
  /// (UNSTABLE_OFFSET_COMMIT is retried until default.api.timeout.ms) rather
  /// than answered as the last stable ones.
  std::map<TopicPartition, OffsetAndMetadata> committed_offsets(const std::string& group,
                                                                const std::vector<TopicPartition>& partitions = {},
                                                                bool require_stable = false);
  /// Commits `offsets` for the group (the next offset to read of each
  /// partition). Kafka refuses while the group has members: KafkaError
  /// UNKNOWN_MEMBER_ID (or a consumer-protocol group's error).
  void alter_offsets(const std::string& group, const std::map<TopicPartition, std::int64_t>& offsets);
  /// OffsetDelete (KIP-496): forget the group's committed offsets of these
  /// partitions. Returns each partition's error code: 0 when deleted,
  /// GROUP_SUBSCRIBED_TO_TOPIC while a member of the group subscribes to its
  /// topic (the others are still deleted), as Kafka's
  /// `kafka-consumer-groups --delete-offsets` reports them. Group-level
  /// errors (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP, authorization) raise
  /// KafkaError; coordinator moves are retried until default.api.timeout.ms.
  std::map<TopicPartition, std::int16_t> delete_offsets(const std::string& group,
                                                        const std::vector<TopicPartition>& partitions);

 private:
  void describe_consumer_group(GroupDescription& g);
  KafkaClient& client_;
  std::unique_ptr<Coordinators> coordinators_;  // each group's coordinator, cached
};

}  // namespace kwire::client
