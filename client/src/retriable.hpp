// Error codes that mean "ask someone else": the partition's leader moved or
// is not known yet, or the leader epoch sent is stale or ahead. The request
// is retried after a metadata refresh.
#pragma once

#include <cstdint>

#include "kwire/protocol/errors.hpp"

namespace kwire::client {

inline bool refresh_worthy(std::int16_t code) {
  using protocol::ErrorCode;
  switch (static_cast<ErrorCode>(code)) {
    case ErrorCode::not_leader_or_follower:
    case ErrorCode::unknown_topic_or_partition:
    case ErrorCode::leader_not_available:
    case ErrorCode::fenced_leader_epoch:
    case ErrorCode::replica_not_available:
    case ErrorCode::kafka_storage_error:
    case ErrorCode::unknown_leader_epoch:
    case ErrorCode::unknown_topic_id:
    case ErrorCode::inconsistent_topic_id:
    case ErrorCode::not_coordinator: return true;
    default: return false;
  }
}

/// A Fetch (or OffsetsForLeaderEpoch) partition error the consumer waits out
/// however long it lasts, refreshing metadata (Java's AbstractFetch and
/// FetchCollector): the partition is being moved or its metadata is stale,
/// the new leader has no high watermark yet, or the broker failed in a way
/// it may not next time.
inline bool fetch_waits_out(std::int16_t code) {
  using protocol::ErrorCode;
  if (code == static_cast<std::int16_t>(ErrorCode::not_coordinator)) return false;
  return refresh_worthy(code) || code == static_cast<std::int16_t>(ErrorCode::offset_not_available) ||
         code == static_cast<std::int16_t>(ErrorCode::unknown_server_error);
}

}  // namespace kwire::client
