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

}  // namespace kwire::client
