// A partition of a topic: the one TopicPartition type of every layer
// (client positions, source planning, checkpoints), ordered by topic name then
// partition number.
#pragma once

#include <compare>
#include <cstdint>
#include <string>

namespace kwire::protocol {

struct TopicPartition {
  std::string topic;
  std::int32_t partition = 0;
  auto operator<=>(const TopicPartition&) const = default;
  bool operator==(const TopicPartition&) const = default;
};

/// "topic-3", as Kafka prints a TopicPartition.
inline std::string to_string(const TopicPartition& tp) { return tp.topic + "-" + std::to_string(tp.partition); }

}  // namespace kwire::protocol
