// The classic group membership protocol: JoinGroup (key 11, v0-9, flexible
// from v6), SyncGroup (key 14, v0-5, flexible from v4), Heartbeat (key 12,
// v0-4, flexible from v4) and LeaveGroup (key 13, v0-5, flexible from v4).
// Source: Kafka's JoinGroup*/SyncGroup*/Heartbeat*/LeaveGroup* .json specs.
//
// A member joins (JoinGroup), the coordinator elects a leader and hands it
// every member's protocol metadata; the leader computes the assignment and
// sends it in SyncGroup, every member receives its own share from SyncGroup;
// members then Heartbeat until the coordinator answers REBALANCE_IN_PROGRESS.
// From JoinGroup v4 an empty member id is answered MEMBER_ID_REQUIRED with the
// id to rejoin with (KIP-394); from v5 GroupInstanceId makes a static member
// (KIP-345). Kafka 4.0 removed JoinGroup v0-v1 and 4.1 brought them back.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kwire/protocol/message.hpp"

namespace kwire::protocol {

struct JoinGroupRequest {
  static constexpr ApiKey api_key = ApiKey::join_group;
  static constexpr std::int16_t min_version = 0, max_version = 9, flexible_since = 6;

  struct JoinGroupRequestProtocol {
    std::string name;  // the assignor ("range", "roundrobin", "cooperative-sticky"...)
    Bytes metadata;    // for protocol type "consumer": a ConsumerProtocolSubscription
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(name);
      v(metadata);
    }
    friend bool operator==(const JoinGroupRequestProtocol&, const JoinGroupRequestProtocol&) = default;
  };

  std::string group_id;
  std::int32_t session_timeout_ms = 0;
  std::int32_t rebalance_timeout_ms = -1;        // v1+ (the Java consumer sends max.poll.interval.ms)
  std::string member_id;                         // "" on the first join
  std::optional<std::string> group_instance_id;  // v5+
  std::string protocol_type;                     // "consumer" for consumers
  std::vector<JoinGroupRequestProtocol> protocols;
  std::optional<std::string> reason;  // v8+
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(group_id);
    v(session_timeout_ms);
    v.since(1, rebalance_timeout_ms);
    v(member_id);
    v.since(5, group_instance_id);
    v(protocol_type);
    v(protocols);
    v.since(8, reason);
  }
  friend bool operator==(const JoinGroupRequest&, const JoinGroupRequest&) = default;
};

struct JoinGroupResponse {
  static constexpr ApiKey api_key = ApiKey::join_group;
  static constexpr std::int16_t min_version = 0, max_version = 9, flexible_since = 6;

  struct JoinGroupResponseMember {
    std::string member_id;
    std::optional<std::string> group_instance_id;  // v5+
    Bytes metadata;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(member_id);
      v.since(5, group_instance_id);
      v(metadata);
    }
    friend bool operator==(const JoinGroupResponseMember&, const JoinGroupResponseMember&) = default;
  };

  std::int32_t throttle_time_ms = 0;  // v2+
  std::int16_t error_code = 0;
  std::int32_t generation_id = -1;
  std::optional<std::string> protocol_type;  // v7+
  std::optional<std::string> protocol_name;  // nullable from v7
  std::string leader;
  bool skip_assignment = false;  // v9+ (KIP-814)
  std::string member_id;
  std::vector<JoinGroupResponseMember> members;  // only the leader gets them
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v.since(2, throttle_time_ms);
    v(error_code);
    v(generation_id);
    v.since(7, protocol_type);
    v(protocol_name);
    v(leader);
    v.since(9, skip_assignment);
    v(member_id);
    v(members);
  }
  friend bool operator==(const JoinGroupResponse&, const JoinGroupResponse&) = default;
};

struct SyncGroupRequest {
  static constexpr ApiKey api_key = ApiKey::sync_group;
  static constexpr std::int16_t min_version = 0, max_version = 5, flexible_since = 4;

  struct SyncGroupRequestAssignment {
    std::string member_id;
    Bytes assignment;  // a ConsumerProtocolAssignment for consumers
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(member_id);
      v(assignment);
    }
    friend bool operator==(const SyncGroupRequestAssignment&, const SyncGroupRequestAssignment&) = default;
  };

  std::string group_id;
  std::int32_t generation_id = -1;
  std::string member_id;
  std::optional<std::string> group_instance_id;         // v3+
  std::optional<std::string> protocol_type;             // v5+
  std::optional<std::string> protocol_name;             // v5+
  std::vector<SyncGroupRequestAssignment> assignments;  // leader only; empty for followers
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(group_id);
    v(generation_id);
    v(member_id);
    v.since(3, group_instance_id);
    v.since(5, protocol_type);
    v.since(5, protocol_name);
    v(assignments);
  }
  friend bool operator==(const SyncGroupRequest&, const SyncGroupRequest&) = default;
};

struct SyncGroupResponse {
  static constexpr ApiKey api_key = ApiKey::sync_group;
  static constexpr std::int16_t min_version = 0, max_version = 5, flexible_since = 4;

  std::int32_t throttle_time_ms = 0;  // v1+
  std::int16_t error_code = 0;
  std::optional<std::string> protocol_type;  // v5+
  std::optional<std::string> protocol_name;  // v5+
  Bytes assignment;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v.since(1, throttle_time_ms);
    v(error_code);
    v.since(5, protocol_type);
    v.since(5, protocol_name);
    v(assignment);
  }
  friend bool operator==(const SyncGroupResponse&, const SyncGroupResponse&) = default;
};

struct HeartbeatRequest {
  static constexpr ApiKey api_key = ApiKey::heartbeat;
  static constexpr std::int16_t min_version = 0, max_version = 4, flexible_since = 4;

  std::string group_id;
  std::int32_t generation_id = -1;
  std::string member_id;
  std::optional<std::string> group_instance_id;  // v3+
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(group_id);
    v(generation_id);
    v(member_id);
    v.since(3, group_instance_id);
  }
  friend bool operator==(const HeartbeatRequest&, const HeartbeatRequest&) = default;
};

struct HeartbeatResponse {
  static constexpr ApiKey api_key = ApiKey::heartbeat;
  static constexpr std::int16_t min_version = 0, max_version = 4, flexible_since = 4;

  std::int32_t throttle_time_ms = 0;  // v1+
  std::int16_t error_code = 0;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v.since(1, throttle_time_ms);
    v(error_code);
  }
  friend bool operator==(const HeartbeatResponse&, const HeartbeatResponse&) = default;
};

struct LeaveGroupRequest {
  static constexpr ApiKey api_key = ApiKey::leave_group;
  static constexpr std::int16_t min_version = 0, max_version = 5, flexible_since = 4;

  struct MemberIdentity {
    std::string member_id;
    std::optional<std::string> group_instance_id;
    std::optional<std::string> reason;  // v5+
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(member_id);
      v(group_instance_id);
      v.since(5, reason);
    }
    friend bool operator==(const MemberIdentity&, const MemberIdentity&) = default;
  };

  std::string group_id;
  std::string member_id;                // v0-v2
  std::vector<MemberIdentity> members;  // v3+ (batch leave, KIP-345)
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(group_id);
    v.until(2, member_id);
    v.since(3, members);
  }
  friend bool operator==(const LeaveGroupRequest&, const LeaveGroupRequest&) = default;
};

struct LeaveGroupResponse {
  static constexpr ApiKey api_key = ApiKey::leave_group;
  static constexpr std::int16_t min_version = 0, max_version = 5, flexible_since = 4;

  struct MemberResponse {
    std::string member_id;
    std::optional<std::string> group_instance_id;
    std::int16_t error_code = 0;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(member_id);
      v(group_instance_id);
      v(error_code);
    }
    friend bool operator==(const MemberResponse&, const MemberResponse&) = default;
  };

  std::int32_t throttle_time_ms = 0;  // v1+
  std::int16_t error_code = 0;
  std::vector<MemberResponse> members;  // v3+
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v.since(1, throttle_time_ms);
    v(error_code);
    v.since(3, members);
  }
  friend bool operator==(const LeaveGroupResponse&, const LeaveGroupResponse&) = default;
};

}  // namespace kwire::protocol
