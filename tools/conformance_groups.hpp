// The consumer-group rows of `kwire conformance` (conformance_groups.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "conformance.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/protocol/api_keys.hpp"

namespace kwire::tools {

template <class M>
ConformanceRow declared_row() {
  ConformanceRow row;
  row.api = std::string(protocol::api_name(M::api_key));
  row.api_key = static_cast<std::int16_t>(M::api_key);
  row.declared_min = M::min_version;
  row.declared_max = M::max_version;
  return row;
}

using RunApi = std::function<void(ConformanceRow, const std::function<std::string(std::int16_t)>&)>;

struct GroupChecks {
  client::KafkaClient* client = nullptr;
  std::string topic;    // one partition with records
  std::string prefix;   // group ids start with it
  bool kafka4 = false;  // a 4.x broker (KIP-848 on by default)
};

/// Adds the rows of FindCoordinator, JoinGroup, SyncGroup, Heartbeat,
/// LeaveGroup, OffsetCommit, OffsetFetch, OffsetDelete, ListGroups,
/// DescribeGroups, ConsumerGroupHeartbeat and ConsumerGroupDescribe.
void run_group_conformance(const GroupChecks& g, const RunApi& run_api);

}  // namespace kwire::tools
