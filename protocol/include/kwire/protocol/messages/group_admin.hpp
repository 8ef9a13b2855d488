// Looking at groups: ListGroups (key 16, v0-5, flexible from v3),
// DescribeGroups (key 15, v0-6, flexible from v5) and ConsumerGroupDescribe
// (key 69, v0-1, always flexible).
// Source: Kafka's ListGroups*/DescribeGroups*/ConsumerGroupDescribe* .json specs.
//
// ListGroups goes to every broker (each lists the groups it coordinates);
// v4 filters by state, v5 by type ("classic", "consumer", "share"). The
// describe calls go to the group's coordinator. DescribeGroups describes
// classic groups (members with their protocol metadata and assignment bytes);
// v6 answers GROUP_ID_NOT_FOUND for an unknown group (KIP-1043) with an
// error message. ConsumerGroupDescribe describes KIP-848 groups: epochs, the
// server assignor, and each member's current and target assignment by topic
// id and name; v1 adds the member type (KIP-1099). An authorized-operations
// value of INT32_MIN means "not requested".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kwire/protocol/message.hpp"

namespace kwire::protocol {

struct ListGroupsRequest {
  static constexpr ApiKey api_key = ApiKey::list_groups;
  static constexpr std::int16_t min_version = 0, max_version = 5, flexible_since = 3;

  std::vector<std::string> states_filter;  // v4+; empty = all
  std::vector<std::string> types_filter;   // v5+; empty = all
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v.since(4, states_filter);
    v.since(5, types_filter);
  }
  friend bool operator==(const ListGroupsRequest&, const ListGroupsRequest&) = default;
};

struct ListGroupsResponse {
  static constexpr ApiKey api_key = ApiKey::list_groups;
  static constexpr std::int16_t min_version = 0, max_version = 5, flexible_since = 3;

  struct ListedGroup {
    std::string group_id;
    std::string protocol_type;  // "consumer" for consumer groups of either protocol
    std::string group_state;    // v4+
    std::string group_type;     // v5+
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(group_id);
      v(protocol_type);
      v.since(4, group_state);
      v.since(5, group_type);
    }
    friend bool operator==(const ListedGroup&, const ListedGroup&) = default;
  };

  std::int32_t throttle_time_ms = 0;  // v1+
  std::int16_t error_code = 0;
  std::vector<ListedGroup> groups;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v.since(1, throttle_time_ms);
    v(error_code);
    v(groups);
  }
  friend bool operator==(const ListGroupsResponse&, const ListGroupsResponse&) = default;
};

inline constexpr std::int32_t kAuthorizedOperationsOmitted = INT32_MIN;

struct DescribeGroupsRequest {
  static constexpr ApiKey api_key = ApiKey::describe_groups;
  static constexpr std::int16_t min_version = 0, max_version = 6, flexible_since = 5;

  std::vector<std::string> groups;
  bool include_authorized_operations = false;  // v3+
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(groups);
    v.since(3, include_authorized_operations);
  }
  friend bool operator==(const DescribeGroupsRequest&, const DescribeGroupsRequest&) = default;
};

struct DescribeGroupsResponse {
  static constexpr ApiKey api_key = ApiKey::describe_groups;
  static constexpr std::int16_t min_version = 0, max_version = 6, flexible_since = 5;

  struct DescribedGroupMember {
    std::string member_id;
    std::optional<std::string> group_instance_id;  // v4+
    std::string client_id;
    std::string client_host;
    Bytes member_metadata;    // ConsumerProtocolSubscription for consumers (Stable groups)
    Bytes member_assignment;  // ConsumerProtocolAssignment for consumers (Stable groups)
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(member_id);
      v.since(4, group_instance_id);
      v(client_id);
      v(client_host);
      v(member_metadata);
      v(member_assignment);
    }
    friend bool operator==(const DescribedGroupMember&, const DescribedGroupMember&) = default;
  };

  struct DescribedGroup {
    std::int16_t error_code = 0;
    std::optional<std::string> error_message;  // v6+
    std::string group_id;
    std::string group_state;    // "Stable", "Empty", "PreparingRebalance", "CompletingRebalance", "Dead"
    std::string protocol_type;  // "consumer"
    std::string protocol_data;  // the chosen assignor
    std::vector<DescribedGroupMember> members;
    std::int32_t authorized_operations = kAuthorizedOperationsOmitted;  // v3+
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(error_code);
      v.since(6, error_message);
      v(group_id);
      v(group_state);
      v(protocol_type);
      v(protocol_data);
      v(members);
      v.since(3, authorized_operations);
    }
    friend bool operator==(const DescribedGroup&, const DescribedGroup&) = default;
  };

  std::int32_t throttle_time_ms = 0;  // v1+
  std::vector<DescribedGroup> groups;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v.since(1, throttle_time_ms);
    v(groups);
  }
  friend bool operator==(const DescribeGroupsResponse&, const DescribeGroupsResponse&) = default;
};

struct ConsumerGroupDescribeRequest {
  static constexpr ApiKey api_key = ApiKey::consumer_group_describe;
  static constexpr std::int16_t min_version = 0, max_version = 1, flexible_since = 0;

  std::vector<std::string> group_ids;
  bool include_authorized_operations = false;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(group_ids);
    v(include_authorized_operations);
  }
  friend bool operator==(const ConsumerGroupDescribeRequest&, const ConsumerGroupDescribeRequest&) = default;
};

struct ConsumerGroupDescribeResponse {
  static constexpr ApiKey api_key = ApiKey::consumer_group_describe;
  static constexpr std::int16_t min_version = 0, max_version = 1, flexible_since = 0;

  struct TopicPartitions {
    Uuid topic_id;
    std::string topic_name;
    std::vector<std::int32_t> partitions;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(topic_id);
      v(topic_name);
      v(partitions);
    }
    friend bool operator==(const TopicPartitions&, const TopicPartitions&) = default;
  };

  struct Assignment {
    std::vector<TopicPartitions> topic_partitions;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(topic_partitions);
    }
    friend bool operator==(const Assignment&, const Assignment&) = default;
  };

  struct Member {
    std::string member_id;
    std::optional<std::string> instance_id;
    std::optional<std::string> rack_id;
    std::int32_t member_epoch = 0;
    std::string client_id;
    std::string client_host;
    std::vector<std::string> subscribed_topic_names;
    std::optional<std::string> subscribed_topic_regex;
    Assignment assignment;
    Assignment target_assignment;
    std::int8_t member_type = -1;  // v1+: -1 unknown, 0 classic, 1 consumer
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(member_id);
      v(instance_id);
      v(rack_id);
      v(member_epoch);
      v(client_id);
      v(client_host);
      v(subscribed_topic_names);
      v(subscribed_topic_regex);
      v(assignment);
      v(target_assignment);
      v.since(1, member_type);
    }
    friend bool operator==(const Member&, const Member&) = default;
  };

  struct DescribedGroup {
    std::int16_t error_code = 0;
    std::optional<std::string> error_message;
    std::string group_id;
    std::string group_state;
    std::int32_t group_epoch = 0;
    std::int32_t assignment_epoch = 0;
    std::string assignor_name;
    std::vector<Member> members;
    std::int32_t authorized_operations = kAuthorizedOperationsOmitted;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(error_code);
      v(error_message);
      v(group_id);
      v(group_state);
      v(group_epoch);
      v(assignment_epoch);
      v(assignor_name);
      v(members);
      v(authorized_operations);
    }
    friend bool operator==(const DescribedGroup&, const DescribedGroup&) = default;
  };

  std::int32_t throttle_time_ms = 0;
  std::vector<DescribedGroup> groups;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(throttle_time_ms);
    v(groups);
  }
  friend bool operator==(const ConsumerGroupDescribeResponse&, const ConsumerGroupDescribeResponse&) = default;
};

}  // namespace kwire::protocol
