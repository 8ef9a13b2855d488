// Committed offsets of a group: OffsetCommit (key 8, v0-10, flexible from v8),
// OffsetFetch (key 9, v0-10, flexible from v6) and OffsetDelete (key 47, v0,
// never flexible). Sent to the group's coordinator (FindCoordinator).
// Source: Kafka's OffsetCommit*/OffsetFetch*/OffsetDelete* .json specs.
//
// A committed offset is the next offset to read. OffsetCommit carries the
// member's generation (classic) or member epoch (KIP-848, v9+); generation -1
// with an empty member id is a commit from outside the group, accepted only
// while the group is empty. RetentionTimeMs exists only in v2-v4 and
// CommitTimestamp only in v1. OffsetFetch v8+ batches several groups (Groups
// replaces the top-level GroupId/Topics) and v9 adds the KIP-848 member id and
// epoch; a null topic list asks for every committed partition; an offset of -1
// means nothing is committed. Kafka 4.x dropped OffsetCommit v0-v1 and
// OffsetFetch v0. v10 (KIP-848; unstable in 4.1, offered from Kafka 4.2)
// names topics by id only: the topic name is gone from requests and answers
// (an unknown id is UNKNOWN_TOPIC_ID). Callers that send names stay at v9:
// `default_max_version` is what Connection::version_for picks.

#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kwire/protocol/message.hpp"

namespace kwire::protocol {

struct OffsetCommitRequest {
  static constexpr ApiKey api_key = ApiKey::offset_commit;
  static constexpr std::int16_t min_version = 0, max_version = 10, flexible_since = 8;
  static constexpr std::int16_t default_max_version = 9;  // v10 needs topic ids

  struct OffsetCommitRequestPartition {
    std::int32_t partition_index = 0;
    std::int64_t committed_offset = 0;
    std::int32_t committed_leader_epoch = -1;  // v6+
    std::int64_t commit_timestamp = -1;        // v1 only
    std::optional<std::string> committed_metadata;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(partition_index);
      v(committed_offset);
      v.since(6, committed_leader_epoch);
      v.range(1, 1, commit_timestamp);
      v(committed_metadata);
    }
    friend bool operator==(const OffsetCommitRequestPartition&, const OffsetCommitRequestPartition&) = default;
  };

  struct OffsetCommitRequestTopic {
    std::string name;  // v0-v9
    std::vector<OffsetCommitRequestPartition> partitions;
    TaggedFields unknown_tagged_fields;
    Uuid topic_id = {};  // v10+, in place of the name on the wire (last here, so {name, partitions, tags} stays)
    template <class V>
    void fields(V& v) {
      v.until(9, name);
      v.since(10, topic_id);
      v(partitions);
    }
    friend bool operator==(const OffsetCommitRequestTopic&, const OffsetCommitRequestTopic&) = default;
  };

  std::string group_id;
  std::int32_t generation_id_or_member_epoch = -1;  // v1+
  std::string member_id;                            // v1+
  std::optional<std::string> group_instance_id;     // v7+
  std::int64_t retention_time_ms = -1;              // v2-v4; -1 = broker default
  std::vector<OffsetCommitRequestTopic> topics;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(group_id);
    v.since(1, generation_id_or_member_epoch);
    v.since(1, member_id);
    v.since(7, group_instance_id);
    v.range(2, 4, retention_time_ms);
    v(topics);
  }
  friend bool operator==(const OffsetCommitRequest&, const OffsetCommitRequest&) = default;
};

struct OffsetCommitResponse {
  static constexpr ApiKey api_key = ApiKey::offset_commit;
  static constexpr std::int16_t min_version = 0, max_version = 10, flexible_since = 8;
  static constexpr std::int16_t default_max_version = 9;  // v10 needs topic ids

  struct OffsetCommitResponsePartition {
    std::int32_t partition_index = 0;
    std::int16_t error_code = 0;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(partition_index);
      v(error_code);
    }
    friend bool operator==(const OffsetCommitResponsePartition&, const OffsetCommitResponsePartition&) = default;
  };

  struct OffsetCommitResponseTopic {
    std::string name;  // v0-v9
    std::vector<OffsetCommitResponsePartition> partitions;
    TaggedFields unknown_tagged_fields;
    Uuid topic_id = {};  // v10+, in place of the name on the wire (last here, so {name, partitions, tags} stays)
    template <class V>
    void fields(V& v) {
      v.until(9, name);
      v.since(10, topic_id);
      v(partitions);
    }
    friend bool operator==(const OffsetCommitResponseTopic&, const OffsetCommitResponseTopic&) = default;
  };

  std::int32_t throttle_time_ms = 0;  // v3+
  std::vector<OffsetCommitResponseTopic> topics;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v.since(3, throttle_time_ms);
    v(topics);
  }
  friend bool operator==(const OffsetCommitResponse&, const OffsetCommitResponse&) = default;
};

struct OffsetFetchRequest {
  static constexpr ApiKey api_key = ApiKey::offset_fetch;
  static constexpr std::int16_t min_version = 0, max_version = 10, flexible_since = 6;
  static constexpr std::int16_t default_max_version = 9;  // v10 needs topic ids

  struct OffsetFetchRequestTopic {
    std::string name;  // v0-v9
    std::vector<std::int32_t> partition_indexes;
    TaggedFields unknown_tagged_fields;
    Uuid topic_id = {};  // v10+, in place of the name on the wire (last here, so {name, partitions, tags} stays)
    template <class V>
    void fields(V& v) {
      v.until(9, name);
      v.since(10, topic_id);
      v(partition_indexes);
    }
    friend bool operator==(const OffsetFetchRequestTopic&, const OffsetFetchRequestTopic&) = default;
  };

  struct OffsetFetchRequestGroup {
    std::string group_id;
    std::optional<std::string> member_id;                        // v9+ (KIP-848 members)
    std::int32_t member_epoch = -1;                              // v9+
    std::optional<std::vector<OffsetFetchRequestTopic>> topics;  // null = all committed partitions
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(group_id);
      v.since(9, member_id);
      v.since(9, member_epoch);
      v(topics);
    }
    friend bool operator==(const OffsetFetchRequestGroup&, const OffsetFetchRequestGroup&) = default;
  };

  std::string group_id;                                        // v0-v7
  std::optional<std::vector<OffsetFetchRequestTopic>> topics;  // v0-v7; null (v2+) = all
  std::vector<OffsetFetchRequestGroup> groups;                 // v8+
  bool require_stable = false;                                 // v7+ (KIP-447)
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v.until(7, group_id);
    v.until(7, topics);
    v.since(8, groups);
    v.since(7, require_stable);
  }
  friend bool operator==(const OffsetFetchRequest&, const OffsetFetchRequest&) = default;
};

struct OffsetFetchResponse {
  static constexpr ApiKey api_key = ApiKey::offset_fetch;
  static constexpr std::int16_t min_version = 0, max_version = 10, flexible_since = 6;
  static constexpr std::int16_t default_max_version = 9;  // v10 needs topic ids

  // One partition, in both the v0-v7 and the v8+ layout.
  struct OffsetFetchResponsePartition {
    std::int32_t partition_index = 0;
    std::int64_t committed_offset = -1;        // -1 = no committed offset
    std::int32_t committed_leader_epoch = -1;  // v5+
    std::optional<std::string> metadata;
    std::int16_t error_code = 0;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(partition_index);
      v(committed_offset);
      v.since(5, committed_leader_epoch);
      v(metadata);
      v(error_code);
    }
    friend bool operator==(const OffsetFetchResponsePartition&, const OffsetFetchResponsePartition&) = default;
  };

  struct OffsetFetchResponseTopic {
    std::string name;  // v0-v9
    std::vector<OffsetFetchResponsePartition> partitions;
    TaggedFields unknown_tagged_fields;
    Uuid topic_id = {};  // v10+, in place of the name on the wire (last here, so {name, partitions, tags} stays)
    template <class V>
    void fields(V& v) {
      v.until(9, name);
      v.since(10, topic_id);
      v(partitions);
    }
    friend bool operator==(const OffsetFetchResponseTopic&, const OffsetFetchResponseTopic&) = default;
  };

  struct OffsetFetchResponseGroup {
    std::string group_id;
    std::vector<OffsetFetchResponseTopic> topics;
    std::int16_t error_code = 0;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(group_id);
      v(topics);
      v(error_code);
    }
    friend bool operator==(const OffsetFetchResponseGroup&, const OffsetFetchResponseGroup&) = default;
  };

  std::int32_t throttle_time_ms = 0;             // v3+
  std::vector<OffsetFetchResponseTopic> topics;  // v0-v7
  std::int16_t error_code = 0;                   // v2-v7
  std::vector<OffsetFetchResponseGroup> groups;  // v8+
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v.since(3, throttle_time_ms);
    v.until(7, topics);
    v.range(2, 7, error_code);
    v.since(8, groups);
  }
  friend bool operator==(const OffsetFetchResponse&, const OffsetFetchResponse&) = default;
};

struct OffsetDeleteRequest {
  static constexpr ApiKey api_key = ApiKey::offset_delete;
  static constexpr std::int16_t min_version = 0, max_version = 0, flexible_since = kNeverFlexible;

  struct OffsetDeleteRequestPartition {
    std::int32_t partition_index = 0;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(partition_index);
    }
    friend bool operator==(const OffsetDeleteRequestPartition&, const OffsetDeleteRequestPartition&) = default;
  };

  struct OffsetDeleteRequestTopic {
    std::string name;
    std::vector<OffsetDeleteRequestPartition> partitions;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(name);
      v(partitions);
    }
    friend bool operator==(const OffsetDeleteRequestTopic&, const OffsetDeleteRequestTopic&) = default;
  };

  std::string group_id;
  std::vector<OffsetDeleteRequestTopic> topics;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(group_id);
    v(topics);
  }
  friend bool operator==(const OffsetDeleteRequest&, const OffsetDeleteRequest&) = default;
};

struct OffsetDeleteResponse {
  static constexpr ApiKey api_key = ApiKey::offset_delete;
  static constexpr std::int16_t min_version = 0, max_version = 0, flexible_since = kNeverFlexible;

  struct OffsetDeleteResponsePartition {
    std::int32_t partition_index = 0;
    std::int16_t error_code = 0;  // GROUP_SUBSCRIBED_TO_TOPIC while a member subscribes to it
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(partition_index);
      v(error_code);
    }
    friend bool operator==(const OffsetDeleteResponsePartition&, const OffsetDeleteResponsePartition&) = default;
  };

  struct OffsetDeleteResponseTopic {
    std::string name;
    std::vector<OffsetDeleteResponsePartition> partitions;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(name);
      v(partitions);
    }
    friend bool operator==(const OffsetDeleteResponseTopic&, const OffsetDeleteResponseTopic&) = default;
  };

  std::int16_t error_code = 0;
  std::int32_t throttle_time_ms = 0;
  std::vector<OffsetDeleteResponseTopic> topics;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(error_code);
    v(throttle_time_ms);
    v(topics);
  }
  friend bool operator==(const OffsetDeleteResponse&, const OffsetDeleteResponse&) = default;
};

}  // namespace kwire::protocol
