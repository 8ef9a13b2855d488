// Small value types shared by the client's public headers: clocks and
// deadlines, topic-partitions, listed offsets and decoded responses. Free of
// Boost.Asio, so an embedder including consumer.hpp or producer.hpp needs only
// the standard library and kwire's own headers.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "kwire/protocol/bytes.hpp"
#include "kwire/protocol/topic_partition.hpp"

namespace kwire::client {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

inline Deadline deadline_after(std::chrono::milliseconds ms) { return Clock::now() + ms; }

/// A decoded response that keeps its frame alive: `Records` views in the body
/// point into `frame`.
template <class M>
struct Response {
  std::shared_ptr<const protocol::Bytes> frame;
  M body;
  std::int16_t version = 0;
};

using protocol::to_string;
using protocol::TopicPartition;

/// ListOffsets targets (protocol guide): -2 earliest, -1 latest, -3 the offset
/// of the record with the largest timestamp; >= 0 a timestamp in ms.
inline constexpr std::int64_t kEarliestTimestamp = -2;
inline constexpr std::int64_t kLatestTimestamp = -1;
inline constexpr std::int64_t kMaxTimestamp = -3;

struct ListedOffset {
  /// The offset; -1 when no record has a timestamp >= the one asked for
  /// (a distinct "no offset" result, never a position).
  std::int64_t offset = -1;
  std::int64_t timestamp = -1;
  std::int32_t leader_epoch = -1;
};

}  // namespace kwire::client
