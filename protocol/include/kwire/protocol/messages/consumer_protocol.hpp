// The consumer protocol's payloads inside JoinGroup and SyncGroup (protocol
// type "consumer"): ConsumerProtocolSubscription (JoinGroup protocol metadata)
// and ConsumerProtocolAssignment (SyncGroup assignment), versions 0-3, never
// flexible. Each is an int16 version followed by the struct at that version.
// Source: Kafka's ConsumerProtocolSubscription.json / ConsumerProtocolAssignment.json.
//
// Subscription: v1 adds OwnedPartitions (cooperative rebalancing, KIP-429),
// v2 GenerationId (KIP-792), v3 RackId (KIP-881). Assignment v1-v3 add
// nothing. Fields are only ever appended, so a payload of a newer version is
// read by its v3 prefix and the rest ignored, as Kafka's clients do.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kwire/protocol/message.hpp"

namespace kwire::protocol {

struct ConsumerProtocolTopicPartition {
  std::string topic;
  std::vector<std::int32_t> partitions;
  TaggedFields unknown_tagged_fields;  // never used: the payloads are not flexible
  template <class V>
  void fields(V& v) {
    v(topic);
    v(partitions);
  }
  friend bool operator==(const ConsumerProtocolTopicPartition&, const ConsumerProtocolTopicPartition&) = default;
};

struct ConsumerProtocolSubscription {
  static constexpr std::int16_t min_version = 0, max_version = 3;

  std::vector<std::string> topics;
  std::optional<Bytes> user_data;
  std::vector<ConsumerProtocolTopicPartition> owned_partitions;  // v1+
  std::int32_t generation_id = -1;                               // v2+
  std::optional<std::string> rack_id;                            // v3+
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(topics);
    v(user_data);
    v.since(1, owned_partitions);
    v.since(2, generation_id);
    v.since(3, rack_id);
  }
  friend bool operator==(const ConsumerProtocolSubscription&, const ConsumerProtocolSubscription&) = default;
};

struct ConsumerProtocolAssignment {
  static constexpr std::int16_t min_version = 0, max_version = 3;

  std::vector<ConsumerProtocolTopicPartition> assigned_partitions;
  std::optional<Bytes> user_data;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(assigned_partitions);
    v(user_data);
  }
  friend bool operator==(const ConsumerProtocolAssignment&, const ConsumerProtocolAssignment&) = default;
};

/// The version prefix and body of `s` at `version` (0-3). Throws ProtocolError
/// for another version.
Bytes encode_consumer_subscription(const ConsumerProtocolSubscription& s, std::int16_t version);
Bytes encode_consumer_assignment(const ConsumerProtocolAssignment& a, std::int16_t version);

/// Decodes a payload of any version >= 0 (newer ones by their v3 prefix).
/// Returns the payload's version; an empty payload is an empty assignment or
/// subscription (version -1), as a leader may send an empty assignment.
/// Throws ProtocolError for a negative version or a malformed body.
std::int16_t decode_consumer_subscription(ByteSpan data, ConsumerProtocolSubscription& out);
std::int16_t decode_consumer_assignment(ByteSpan data, ConsumerProtocolAssignment& out);

}  // namespace kwire::protocol
